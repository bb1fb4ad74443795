//! Run-time filters known before a statement runs: a filtered dimension's join keys are
//! read first.
//!
//! A hash join's run-time filter reaches its probe scan only while the statement runs, and
//! only where the plan lets it. On a cluster, joins between the dimension and the scan are
//! partitioned ones, each a stage boundary, and a filter reaches only scans in its own
//! join's stage ([`super::engine`]): TPC-DS q64's `item` (six colours, a price range)
//! narrows `store_sales` through two joins with returns and catalog sales, and on a cluster
//! `store_sales` was selected whole (14.6 MB against 9 KB at SF 0.01). In one process, a
//! scan planned with no filter and every column is fetched (`TableDef::scan_mode`), as
//! pushing it down would send the whole table back: q21 and q39's `inventory`, which their
//! `date_dim` filter later cuts to a few weeks, was read whole (20 MB at SF 0.01).
//!
//! So in the run-time filter modes, after the optimizer (and on a cluster after
//! [`super::subqueries`]), a statement's filtered dimensions answer first with their join
//! keys, as jobs of their own: for an equi-join whose one side (the *source*) joins
//! nothing and has a filter, `SELECT key FROM source` runs (NULL keys left out, at most
//! [`MAX_ROWS`]` + 1` rows answered, so that it stops early), and the other side gets as a
//! filter on top `key BETWEEN first AND last` when the keys are consecutive integers, as a
//! date range's are, however many; otherwise `key IN (v1, …)` when they are at most
//! [`MAX_VALUES`] distinct values.
//! The optimizer's filter pushdown then takes that filter down through the other side's
//! joins to the scan that reads the key, which lowers it into its S3 Select SQL at planning
//! time — standard SQL, as any store takes. In one process only the few rules that do so run
//! again ([`finish`]); on a cluster the scheduler optimizes the plan it is sent. A job whose
//! filter keeps few rows of a large table would still read all of it, so a source's table
//! has at most [`MAX_SOURCE_ROWS`] rows.
//!
//! Rows are unchanged: a row of the other side whose key is not among the source's
//! (non-NULL) keys has no partner, and an inner or semi join drops it anyway. Only joins
//! where that holds are touched: inner joins (either side the source), left and right
//! semi joins (the filtering side the source), with `=` that never matches NULL, on plain
//! columns of the same type. Outer joins, anti joins and joins on expressions are left to
//! the planner.
//!
//! The cost is the source read twice (the answer's keys are few, but the store scans the
//! dimension again) and one round of jobs before the statement; an empty source makes the
//! filter `false`, and the optimizer then leaves out what cannot give a row. Auto mode
//! leaves out a job whose source its table's sample predicts to keep more rows than a job
//! answers, or more distinct keys than a list carries that are no range
//! ([`predicted_over`]), or whose lists would narrow only sides of Parquet scans too
//! small for a select to pay ([`side_fetched_whatever`]), and the plans say so. In one
//! process it also leaves out a job whose source keeps a range of keys (a span of dates)
//! where every side's scan of the key chooses once its join's run-time filter is known
//! ([`keeps_a_key_range`], [`bounds_reach`]): that filter's bounds say what the job's range
//! would, and the round before the statement would buy nothing. Where a side's scan is
//! fetched whole as planned (q21's `inventory`), or no sampled row of the source passes its
//! filter (an empty source, whose job empties the plan before it runs), the job runs.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, NullEquality, Result as DfResult, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::{lit, Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::eliminate_filter::EliminateFilter;
use datafusion::optimizer::propagate_empty_relation::PropagateEmptyRelation;
use datafusion::optimizer::push_down_filter::PushDownFilter;
use datafusion::optimizer::simplify_expressions::SimplifyExpressions;
use datafusion::optimizer::{Optimizer, OptimizerRule};
use futures::future::try_join_all;

use super::subqueries::{column_values, has_subquery, RunJob};
use crate::scan::S3Table;

/// The most key values a list may carry where the store takes expressions of any length.
const MAX_VALUES: usize = 1000;

/// The longest key list, in bytes of SQL, for a store that refuses expressions longer than
/// `max_expression_bytes`: a quarter of it, the rest being the statement's own columns and
/// filters. (Ceph RGW takes 4 KiB.)
pub(crate) fn list_budget(max_expression_bytes: Option<usize>) -> Option<usize> {
    max_expression_bytes.map(|max| max / 4)
}

/// The most rows a source's table may have. A larger one is a fact table, which a filter
/// keeping few rows would have the job read whole, or TPC-DS's 1.9 M
/// `customer_demographics`, whose filters keep far more keys than a list carries.
const MAX_SOURCE_ROWS: usize = 1_000_000;

/// The most rows a job answers with. A dimension's key is mostly its surrogate key, one row
/// each; with repeats allowed for, a source of at most [`MAX_VALUES`] distinct keys fits.
/// The job stops reading once it has one row more than this.
const MAX_ROWS: usize = 4 * MAX_VALUES;

/// What one job answers: the distinct keys `key` takes in `source`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct KeysOf {
    source: LogicalPlan,
    key: Column,
}

impl KeysOf {
    /// Whether `other` answers the same values: the same key of the same plan, under
    /// whatever aliases each is named (an alias renames a plan's columns, not their values).
    fn same_values(&self, other: &KeysOf) -> bool {
        fn unaliased(mut plan: &LogicalPlan) -> &LogicalPlan {
            while let LogicalPlan::SubqueryAlias(alias) = plan {
                plan = &alias.input;
            }
            plan
        }
        self.key.name == other.key.name && unaliased(&self.source) == unaliased(&other.source)
    }
}

/// One filter a join's side can get: the side's `key` must be among `keys.source`'s keys.
struct Narrowing {
    /// The side narrowed: true for the join's left input.
    left: bool,
    key: Column,
    keys: KeysOf,
}

/// What [`narrow`] made of a plan.
#[derive(Default)]
pub(crate) struct Narrowed {
    /// The plan with its filters on; `None` when no side got one.
    pub(crate) plan: Option<LogicalPlan>,
    /// A line for the plans for each job auto mode left out ([`predicted_over`]).
    pub(crate) not_read: Vec<String>,
}

/// Where a statement runs, as far as its jobs care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunsIn {
    /// In this process: a hash join's run-time filter reaches the scans below its probe
    /// side, through the inner joins and the preserved sides of outer joins above them.
    Process,
    /// On a cluster, where a run-time filter stays in its join's stage (module docs).
    Cluster,
}

/// A job a statement's joins want, and what auto mode knows of it before it runs.
struct Wanted {
    keys: KeysOf,
    /// Whether one of the sides it narrows has a scan its list can help.
    helps: bool,
    /// Whether each side's scan of the key chooses once the run-time filter of its join is
    /// known ([`bounds_reach`]); in one process only.
    bounds_reach: bool,
}

/// `plan` (optimized) with each filtered dimension's keys read first and put as filters on
/// the sides they join (module docs). `budget` bounds a list's SQL ([`list_budget`]).
pub(crate) async fn narrow<'a>(
    plan: LogicalPlan,
    run: &'a RunJob<'a>,
    budget: Option<usize>,
    runs_in: RunsIn,
) -> DfResult<Narrowed> {
    let mut wanted: Vec<Wanted> = Vec::new();
    plan.apply(|node| {
        if let LogicalPlan::Join(join) = node {
            for narrowing in narrowings(join)? {
                let side = match narrowing.left {
                    true => join.left.as_ref(),
                    false => join.right.as_ref(),
                };
                let at = match wanted.iter().position(|w| w.keys == narrowing.keys) {
                    Some(at) => at,
                    None => {
                        wanted.push(Wanted {
                            keys: narrowing.keys,
                            helps: false,
                            bounds_reach: runs_in == RunsIn::Process,
                        });
                        wanted.len() - 1
                    }
                };
                let wants = &mut wanted[at];
                // A job one side already needs is not looked at again for another.
                if !wants.helps {
                    wants.helps = !side_fetched_whatever(side)?;
                }
                if wants.bounds_reach {
                    wants.bounds_reach = bounds_reach(side, &narrowing.key.name)?;
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    // Left out in auto mode: a job whose lists would narrow only small fetched scans, one
    // whose work the joins' run-time filters do (its source, asked last as it counts over
    // the sample, keeps a range of keys), and one whose source is predicted to answer too
    // many rows. A job whose rows cannot be predicted runs, as in the other modes.
    let mut not_read = Vec::new();
    let wanted: Vec<KeysOf> = wanted
        .into_iter()
        .filter_map(|wants| {
            let keys = wants.keys;
            if !wants.helps {
                not_read.push(format!(
                    "Join keys not read: {}, the sides it narrows have only scans fetched \
                     whatever their filters\n",
                    keys.key
                ));
                return None;
            }
            if wants.bounds_reach && keeps_a_key_range(&keys).unwrap_or(false) {
                not_read.push(format!(
                    "Join keys not read: {}, a range, which its joins' run-time filters give \
                     the scans it narrows as bounds\n",
                    keys.key
                ));
                return None;
            }
            match predicted_over(&keys) {
                Ok(Some(line)) => {
                    not_read.push(line);
                    None
                }
                _ => Some(keys),
            }
        })
        .collect();
    if wanted.is_empty() {
        return Ok(Narrowed {
            plan: None,
            not_read,
        });
    }
    // One job for the sources that read the same keys under different names (q83's three
    // subqueries each filter `date_dim` the same way); all at once: Ballista runs jobs side
    // by side.
    let mut jobs: Vec<&KeysOf> = Vec::new();
    let job_of: Vec<usize> = wanted
        .iter()
        .map(
            |keys| match jobs.iter().position(|job| job.same_values(keys)) {
                Some(job) => job,
                None => {
                    jobs.push(keys);
                    jobs.len() - 1
                }
            },
        )
        .collect();
    let found = try_join_all(jobs.iter().map(|keys| distinct_keys(keys, run))).await?;
    let answers: HashMap<KeysOf, Vec<ScalarValue>> = wanted
        .iter()
        .zip(job_of)
        .filter_map(|(keys, job)| {
            let values = found[job].as_ref()?;
            fits(values, budget).then(|| (keys.clone(), values.clone()))
        })
        .collect();
    if answers.is_empty() {
        return Ok(Narrowed {
            plan: None,
            not_read,
        });
    }
    // Bottom up, so that a join's sources are as `narrowings` saw them (a source joins
    // nothing, and nothing below it is rewritten).
    plan.transform_up(|node| {
        let LogicalPlan::Join(join) = node else {
            return Ok(Transformed::no(node));
        };
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for narrowing in narrowings(&join)? {
            if let Some(values) = answers.get(&narrowing.keys) {
                let filter = key_filter(narrowing.key, values);
                match narrowing.left {
                    true => left.push(filter),
                    false => right.push(filter),
                }
            }
        }
        if left.is_empty() && right.is_empty() {
            return Ok(Transformed::no(LogicalPlan::Join(join)));
        }
        Ok(Transformed::yes(LogicalPlan::Join(Join {
            left: filtered(join.left.as_ref(), left)?.into(),
            right: filtered(join.right.as_ref(), right)?.into(),
            ..join
        })))
    })
    .map(|t| Narrowed {
        plan: t.transformed.then_some(t.data),
        not_read,
    })
}

/// `plan` as [`narrow`] left it, made ready to plan without optimizing it whole again: its
/// key filters pushed down to the scans that read the keys, and an empty source's `false`
/// turned into the empty relation it makes and carried up through the joins. The rest of
/// the plan was optimized before the filters were put on, and they change nothing else.
pub(crate) fn finish(plan: LogicalPlan, state: &SessionState) -> DfResult<LogicalPlan> {
    let rules: Vec<Arc<dyn OptimizerRule + Send + Sync>> = vec![
        Arc::new(SimplifyExpressions::new()),
        Arc::new(EliminateFilter::new()),
        Arc::new(PropagateEmptyRelation::new()),
        Arc::new(PushDownFilter::new()),
    ];
    Optimizer::with_rules(rules).optimize(plan, state, |_, _| {})
}

/// `state` for a plan already analyzed and optimized (one [`finish`] made): the same, with
/// no logical rule left to apply (the physical planner and its optimizer run as usual).
pub(crate) fn already_optimized(state: SessionState) -> SessionState {
    SessionStateBuilder::new_from_existing(state)
        .with_analyzer_rules(Vec::new())
        .with_optimizer_rules(Vec::new())
        .build()
}

/// In auto mode, a line saying why the job reading `keys` is left out when its source's
/// sample predicts its answer would be dropped: more than [`MAX_ROWS`] rows, or more than
/// [`MAX_VALUES`] of a key no two rows share (increasing along the sample) and not a range
/// of it ([`S3Table::keeps_a_key_range`]). Reading it would cost a round before the
/// statement and a scan of the table on the store for nothing (at SF 1, three of TPC-DS
/// q85's four jobs, two of them over `web_sales`; q30's 1.7 K addresses in one state).
/// `None` when the job runs: its keys are predicted to fit, or nothing predicts them (the
/// other modes, which have no sample; gzip text; a source with a filter the store cannot
/// apply, which DataFusion keeps above the scan).
fn predicted_over(keys: &KeysOf) -> DfResult<Option<String>> {
    let asked = of_source_table(keys, |table, filters| {
        let rows = table.predicted_rows(filters)?;
        let (name, key) = (table.name(), &keys.key.name);
        if rows > MAX_ROWS as f64 {
            return Some(format!(
                "Join keys not read: {name}.{key}, its filter predicted to keep ~{rows:.0} of \
                 {} rows (a job answers at most {MAX_ROWS})\n",
                table.estimated_rows()
            ));
        }
        let distinct = table.is_increasing(key);
        (rows > MAX_VALUES as f64 && distinct && !table.keeps_a_key_range(filters, key)).then(
            || {
                format!(
                    "Join keys not read: {name}.{key}, its filter predicted to keep ~{rows:.0} \
                     distinct keys, not a range (a list carries at most {MAX_VALUES})\n"
                )
            },
        )
    })?;
    Ok(asked.flatten())
}

/// `ask` of the table `keys.source` scans and the scan's filters, when the source is a
/// plain scan of one (renamed and projected only, its filters all taken by the scan);
/// `None` otherwise.
fn of_source_table<T>(
    keys: &KeysOf,
    ask: impl FnOnce(&S3Table, &[Expr]) -> T,
) -> DfResult<Option<T>> {
    let mut node = &keys.source;
    let scan = loop {
        match node {
            LogicalPlan::Projection(projection) => node = &projection.input,
            LogicalPlan::SubqueryAlias(alias) => node = &alias.input,
            LogicalPlan::TableScan(scan) => break scan,
            _ => return Ok(None),
        }
    };
    let provider = source_as_provider(&scan.source)?;
    Ok(provider
        .downcast_ref::<S3Table>()
        .map(|table| ask(table, &scan.filters)))
}

/// In auto mode over Parquet, whether the job reading `keys` answers a range of keys,
/// predicted from its source's filters ([`S3Table::keeps_a_key_range`]). A hash join's
/// run-time filter carries the bounds of its build side's keys (a list only when they are
/// few), and bounds say of a range all a list would.
fn keeps_a_key_range(keys: &KeysOf) -> DfResult<bool> {
    let asked = of_source_table(keys, |table, filters| {
        table.keeps_a_key_range(filters, &keys.key.name)
    })?;
    Ok(asked.unwrap_or(false))
}

/// Whether the run-time filter of a join on `key` reaches, from the top of `side` (its
/// probe side), a scan reading `key` that chooses only once the filter is known (auto
/// mode over Parquet, [`S3Table::chooses_after_run_time_filters`]): down projections,
/// filters and renames that keep the key's name, inner joins, and the preserved sides of
/// outer, semi and anti joins, as DataFusion pushes filters down. A side it does not reach
/// in this way keeps its job.
fn bounds_reach(side: &LogicalPlan, key: &str) -> DfResult<bool> {
    let has_key = |plan: &LogicalPlan| plan.schema().fields().iter().any(|f| f.name() == key);
    let below = match side {
        LogicalPlan::Projection(p) => vec![p.input.as_ref()],
        LogicalPlan::Filter(f) => vec![f.input.as_ref()],
        LogicalPlan::SubqueryAlias(a) => vec![a.input.as_ref()],
        LogicalPlan::Join(join) => {
            let (left, right) = match join.join_type {
                JoinType::Inner => (true, true),
                JoinType::Left | JoinType::LeftSemi | JoinType::LeftAnti => (true, false),
                JoinType::Right | JoinType::RightSemi | JoinType::RightAnti => (false, true),
                _ => (false, false),
            };
            [(left, join.left.as_ref()), (right, join.right.as_ref())]
                .into_iter()
                .filter_map(|(preserved, child)| preserved.then_some(child))
                .collect()
        }
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source)?;
            return Ok(provider.downcast_ref::<S3Table>().is_some_and(|table| {
                table.chooses_after_run_time_filters(scan.projection.as_deref(), &scan.filters)
            }));
        }
        _ => return Ok(false),
    };
    // The one input the key comes from; none when both have a column of its name.
    let mut with_key = below.into_iter().filter(|child| has_key(child));
    match (with_key.next(), with_key.next()) {
        (Some(child), None) => bounds_reach(child, key),
        _ => Ok(false),
    }
}

/// In auto mode, whether every scan of `side` is fetched whatever its filters (Parquet
/// tables too small for any select to pay). A key list put on a side changes only that
/// side's rows (the join with the source drops the same rows above it), and so only the
/// choices of that side's scans, directly or through the run-time filters of the side's own
/// joins: when none of them can be pushed, the job's round before the statement buys
/// little. False when the side reads no table, and always in the other modes.
fn side_fetched_whatever(side: &LogicalPlan) -> DfResult<bool> {
    // `None` until a scan is seen; the walk stops at the first scan that may be pushed.
    let mut all_fetched = None;
    side.apply(|node| {
        let LogicalPlan::TableScan(scan) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let provider = source_as_provider(&scan.source)?;
        let fetched = provider.downcast_ref::<S3Table>().is_some_and(|table| {
            table.fetched_whatever_the_filters(scan.projection.as_deref(), &scan.filters)
        });
        all_fetched = Some(fetched);
        Ok(match fetched {
            true => TreeNodeRecursion::Continue,
            false => TreeNodeRecursion::Stop,
        })
    })?;
    Ok(all_fetched == Some(true))
}

/// The filters `join` lets its sides get from the other side's keys.
fn narrowings(join: &Join) -> DfResult<Vec<Narrowing>> {
    if join.null_equality != NullEquality::NullEqualsNothing || join.null_aware {
        return Ok(Vec::new());
    }
    // Which inputs may be a source: a row of the other side without a partner in it must
    // be one the join drops.
    let (left_source, right_source) = match join.join_type {
        JoinType::Inner => (true, true),
        JoinType::LeftSemi => (false, true),
        JoinType::RightSemi => (true, false),
        _ => (false, false),
    };
    let mut found = Vec::new();
    for (source_is_left, allowed) in [(true, left_source), (false, right_source)] {
        let (source, other) = match source_is_left {
            true => (join.left.as_ref(), join.right.as_ref()),
            false => (join.right.as_ref(), join.left.as_ref()),
        };
        if !allowed || !is_filtered_dimension(source)? {
            continue;
        }
        for (l, r) in &join.on {
            let (source_key, other_key) = match source_is_left {
                true => (l, r),
                false => (r, l),
            };
            let (Expr::Column(source_key), Expr::Column(other_key)) = (source_key, other_key)
            else {
                continue;
            };
            let type_of = |plan: &LogicalPlan, key: &Column| -> DfResult<_> {
                let schema = plan.schema();
                Ok(schema
                    .field(schema.index_of_column(key)?)
                    .data_type()
                    .clone())
            };
            if type_of(source, source_key)? != type_of(other, other_key)? {
                continue;
            }
            found.push(Narrowing {
                left: !source_is_left,
                key: other_key.clone(),
                keys: KeysOf {
                    source: source.clone(),
                    key: source_key.clone(),
                },
            });
        }
    }
    Ok(found)
}

/// Whether `plan` reads one table of at most [`MAX_SOURCE_ROWS`], with a filter, and joins
/// nothing: a dimension whose keys a job can read cheaply and which keeps fewer than all of
/// them.
fn is_filtered_dimension(plan: &LogicalPlan) -> DfResult<bool> {
    let mut simple = true;
    let mut filtered = false;
    plan.apply(|node| {
        match node {
            LogicalPlan::Filter(_) => filtered = true,
            LogicalPlan::TableScan(scan) => {
                filtered |= !scan.filters.is_empty();
                let provider = source_as_provider(&scan.source)?;
                if let Some(table) = provider.downcast_ref::<S3Table>() {
                    simple &= table.estimated_rows() <= MAX_SOURCE_ROWS;
                }
            }
            LogicalPlan::Projection(_) | LogicalPlan::SubqueryAlias(_) => {}
            _ => simple = false,
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(simple && filtered && !has_subquery(plan)?)
}

/// The distinct non-NULL values of `keys.key` in `keys.source`, sorted, or `None` when
/// there are more than [`MAX_VALUES`] that are not a range (or the source has more than
/// [`MAX_ROWS`] rows with one): a range is sent as its ends (`key_filter`), however long.
/// The job asks for rows, not for distinct values: a limit on rows stops each task's scan
/// once it is met, where a DISTINCT's partial aggregation reads every row the filter
/// keeps before the limit applies. The client removes the repeats.
async fn distinct_keys<'a>(
    keys: &KeysOf,
    run: &'a RunJob<'a>,
) -> DfResult<Option<Vec<ScalarValue>>> {
    let key = Expr::Column(keys.key.clone());
    let job = LogicalPlanBuilder::from(keys.source.clone())
        .filter(key.clone().is_not_null())?
        .project([key])?
        .limit(0, Some(MAX_ROWS + 1))?
        .build()?;
    let mut values = column_values(&run(job).await?)?;
    if values.len() > MAX_ROWS {
        return Ok(None);
    }
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.dedup();
    Ok((values.len() <= MAX_VALUES || as_range(&values).is_some()).then_some(values))
}

/// Whether the filter on `values` stays within `budget` bytes of SQL: a range always does;
/// a list takes roughly each value's text and a separator.
fn fits(values: &[ScalarValue], budget: Option<usize>) -> bool {
    budget.is_none_or(|budget| {
        as_range(values).is_some()
            || values
                .iter()
                .map(|v| v.to_string().len() + 4)
                .sum::<usize>()
                <= budget
    })
}

/// The keys' filter: `false` when there are none (the source has no key, so the join has
/// no row); `key BETWEEN first AND last` when they are consecutive integers (a year of
/// `date_dim`'s surrogate keys: 365 values, which as a list would pass the quarter of Ceph
/// RGW's 4 KiB expression limit a list may take, and cost the store a set lookup per row
/// for what two comparisons say); otherwise `key IN (values)`.
fn key_filter(key: Column, values: &[ScalarValue]) -> Expr {
    if values.is_empty() {
        return lit(false);
    }
    if let Some((first, last)) = as_range(values) {
        return Expr::Column(key).between(
            Expr::Literal(first.clone(), None),
            Expr::Literal(last.clone(), None),
        );
    }
    Expr::Column(key).in_list(
        values
            .iter()
            .map(|v| Expr::Literal(v.clone(), None))
            .collect(),
        false,
    )
}

/// The first and last of `values` (sorted and distinct, as [`distinct_keys`] gives them)
/// when there are more than one and they are consecutive integers (of the key types the
/// tables have, as `scan::key_set` takes them): the range between them then holds exactly
/// the values.
fn as_range(values: &[ScalarValue]) -> Option<(&ScalarValue, &ScalarValue)> {
    fn integer(value: &ScalarValue) -> Option<i64> {
        match value {
            ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
            ScalarValue::Int64(Some(v)) => Some(*v),
            _ => None,
        }
    }
    let (first, last) = (values.first()?, values.last()?);
    let start = integer(first)?;
    let consecutive = values.len() > 1
        && (0..).zip(values).all(|(i, value)| {
            start
                .checked_add(i)
                .is_some_and(|want| integer(value) == Some(want))
        });
    consecutive.then_some((first, last))
}

/// `plan` under `filters`, if any.
fn filtered(plan: &LogicalPlan, filters: Vec<Expr>) -> DfResult<LogicalPlan> {
    match filters.into_iter().reduce(Expr::and) {
        Some(filter) => LogicalPlanBuilder::from(plan.clone())
            .filter(filter)?
            .build(),
        None => Ok(plan.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use futures::FutureExt;

    use crate::scan::Mode;

    use super::super::test_tables::{collect, rewritten, session, sorted_lines};

    /// `plan` narrowed, or as it was when nothing narrowed it.
    fn narrowed_or_same<'a>(
        plan: LogicalPlan,
        run: &'a RunJob<'a>,
        budget: Option<usize>,
    ) -> futures::future::BoxFuture<'a, DfResult<LogicalPlan>> {
        async move {
            let same = plan.clone();
            Ok(narrow(plan, run, budget, RunsIn::Process)
                .await?
                .plan
                .unwrap_or(same))
        }
        .boxed()
    }

    /// `sql`, optimized, with its dimensions' keys read first: its plan, whether its rows
    /// are the statement's own, and the jobs run before it.
    async fn narrowed(sql: &str, budget: Option<usize>) -> (String, bool, usize) {
        let ctx = session().await;
        let plan = ctx
            .sql(sql)
            .await
            .expect("sql")
            .into_optimized_plan()
            .expect("plan");
        let expected = sorted_lines(&collect(&ctx, plan.clone()).await);
        let (got, jobs) = match budget {
            None => rewritten(&ctx, plan, |plan, run| narrowed_or_same(plan, run, None)).await,
            Some(_) => {
                rewritten(&ctx, plan, |plan, run| narrowed_or_same(plan, run, Some(8))).await
            }
        };
        let got = got.expect("narrowed");
        let text = got.display_indent().to_string();
        let same = sorted_lines(&collect(&ctx, got).await) == expected;
        (text, same, jobs)
    }

    #[tokio::test]
    async fn a_filtered_dimension_narrows_the_side_it_joins() {
        // Weeks 1: dates a and b; the list lands on `sales`, whose NULL date it drops too.
        let sql = "SELECT amount FROM sales JOIN dates ON date = d_date WHERE d_week = 1";
        let (plan, same, jobs) = narrowed(sql, None).await;
        assert_eq!(jobs, 1);
        assert!(
            plan.contains(r#"sales.date IN ([Utf8("a"), Utf8("b")])"#),
            "{plan}"
        );
        assert!(same, "{plan}");
    }

    #[tokio::test]
    async fn consecutive_integer_keys_are_a_range_that_fits_any_budget() {
        // Weeks 1 and 2 (dates a, b, c): a range on `weekly`, which drops its week 4 and
        // its NULL; within a budget of 8 bytes, which the list `1, 2` would pass.
        let sql = "SELECT total FROM weekly JOIN dates ON week = d_week WHERE d_date <> 'x'";
        for budget in [None, Some(8)] {
            let (plan, same, jobs) = narrowed(sql, budget).await;
            assert_eq!(jobs, 1);
            assert!(
                plan.contains("weekly.week BETWEEN Int32(1) AND Int32(2)"),
                "{plan}"
            );
            assert!(same, "{plan}");
        }
    }

    #[tokio::test]
    async fn a_long_run_of_keys_is_a_range_and_a_long_list_is_dropped() {
        use datafusion::arrow::array::{ArrayRef, Int32Array};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        use datafusion::arrow::record_batch::RecordBatch;
        use datafusion::datasource::MemTable;
        // 2,400 seconds, 100 to an hour, every other one even; a visit every tenth second.
        let ctx = session().await;
        let table = |names: &[&str], columns: Vec<Vec<i32>>| {
            let fields = names.iter().map(|n| Field::new(*n, DataType::Int32, false));
            let schema = Arc::new(Schema::new(fields.collect::<Vec<_>>()));
            let columns = columns
                .into_iter()
                .map(|c| Arc::new(Int32Array::from(c)) as ArrayRef)
                .collect();
            let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
            Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())
        };
        let seconds: Vec<i32> = (0..2400).collect();
        let hours = seconds.iter().map(|s| s / 100).collect();
        let even = seconds.iter().map(|s| 1 - s % 2).collect();
        let secs = table(&["t_sk", "t_hour", "t_even"], vec![seconds, hours, even]);
        ctx.register_table("secs", secs).unwrap();
        let at: Vec<i32> = (0..240).map(|v| v * 10).collect();
        ctx.register_table("visits", table(&["at", "v"], vec![at.clone(), at]))
            .unwrap();
        for (filter, narrowed) in [
            // Hours 3 to 17: 1,500 consecutive keys, sent as their ends.
            (
                "t_hour BETWEEN 3 AND 17",
                "visits.at BETWEEN Int32(300) AND Int32(1799)",
            ),
            // 1,200 keys with gaps: more than a list carries, so no filter.
            ("t_even = 1", ""),
        ] {
            let sql = format!("SELECT v FROM visits JOIN secs ON at = t_sk WHERE {filter}");
            let plan = ctx.sql(&sql).await.unwrap().into_optimized_plan().unwrap();
            let expected = sorted_lines(&collect(&ctx, plan.clone()).await);
            let (got, jobs) =
                rewritten(&ctx, plan, |plan, run| narrowed_or_same(plan, run, None)).await;
            let got = got.expect("narrowed");
            let text = got.display_indent().to_string();
            assert_eq!(jobs, 1, "{text}");
            match narrowed {
                "" => assert!(!text.contains("Filter: visits.at"), "{text}"),
                filter => assert!(text.contains(filter), "{text}"),
            }
            assert_eq!(sorted_lines(&collect(&ctx, got).await), expected);
        }
    }

    #[test]
    fn only_consecutive_integers_make_a_range() {
        let ints = |v: &[i64]| v.iter().map(|&v| ScalarValue::Int64(Some(v))).collect();
        let range =
            |values: Vec<ScalarValue>| key_filter(Column::from_name("k"), &values).to_string();
        assert_eq!(range(ints(&[7, 8, 9])), "k BETWEEN Int64(7) AND Int64(9)");
        // A gap, a single value, text: lists.
        assert_eq!(range(ints(&[7, 9])), "k IN ([Int64(7), Int64(9)])");
        assert_eq!(range(ints(&[7])), "k IN ([Int64(7)])");
        let text = vec![ScalarValue::from("a"), ScalarValue::from("b")];
        assert_eq!(range(text), r#"k IN ([Utf8("a"), Utf8("b")])"#);
        assert_eq!(range(Vec::new()), "Boolean(false)");
        // A long run fits a budget its list would pass.
        let run: Vec<ScalarValue> = ints(&(1..=365).collect::<Vec<_>>());
        assert!(fits(&run, Some(16)));
        assert!(!fits(&ints(&[1, 3, 5, 7]), Some(16)));
    }

    #[tokio::test]
    async fn a_key_the_source_repeats_is_listed_once() {
        // Dates a and b are both in week 1: the job answers 1 twice.
        let sql = "SELECT date FROM sales JOIN dates ON amount = d_week WHERE d_date <> 'c'";
        let (plan, same, jobs) = narrowed(sql, None).await;
        assert_eq!(jobs, 1);
        assert!(plan.contains("sales.amount IN ([Int32(1)])"), "{plan}");
        assert!(same, "{plan}");
    }

    #[tokio::test]
    async fn sources_read_alike_under_other_names_are_one_job() {
        // Two branches' subqueries filter `dates` alike (TPC-DS q83's shape): one job
        // answers both; filtered otherwise, each is a job of its own.
        let union = |second_week: &str| {
            format!(
                "SELECT amount FROM sales \
                 WHERE date IN (SELECT d_date FROM dates WHERE d_week = 1) UNION ALL \
                 SELECT amount FROM sales \
                 WHERE date IN (SELECT d_date FROM dates WHERE d_week {second_week})"
            )
        };
        let (plan, same, jobs) = narrowed(&union("= 1"), None).await;
        assert_eq!(jobs, 1, "{plan}");
        assert_eq!(
            plan.matches(r#"sales.date IN ([Utf8("a"), Utf8("b")])"#)
                .count(),
            2,
            "{plan}"
        );
        assert!(same, "{plan}");
        let (plan, same, jobs) = narrowed(&union("< 3"), None).await;
        assert_eq!(jobs, 2, "{plan}");
        assert!(same, "{plan}");
    }

    #[tokio::test]
    async fn a_semi_join_narrows_its_kept_side_and_an_empty_source_empties_the_join() {
        let sql = "SELECT amount FROM sales WHERE date IN \
                   (SELECT d_date FROM dates WHERE d_week = 2)";
        let (plan, same, jobs) = narrowed(sql, None).await;
        assert_eq!(jobs, 1);
        assert!(plan.contains(r#"sales.date IN ([Utf8("c")])"#), "{plan}");
        assert!(same, "{plan}");
        let sql = "SELECT amount FROM sales JOIN dates ON date = d_date WHERE d_week = 3";
        let (plan, same, jobs) = narrowed(sql, None).await;
        assert_eq!(jobs, 1);
        assert!(plan.contains("Filter: Boolean(false)"), "{plan}");
        assert!(same, "{plan}");
    }

    #[tokio::test]
    async fn a_finished_plan_needs_no_second_optimization() {
        // Week 1: the list (simplified, as the whole optimizer does a short one) goes down
        // to `sales`' scan; week 3: no key, no row, no join.
        let cases = [
            (
                "d_week = 1",
                r#"Filter: sales.date = Utf8("a") OR sales.date = Utf8("b")"#,
            ),
            ("d_week = 3", "EmptyRelation"),
        ];
        for (filter, shown) in cases {
            let sql =
                format!("SELECT amount FROM sales JOIN dates ON date = d_date WHERE {filter}");
            let ctx = session().await;
            let plan = ctx.sql(&sql).await.expect("sql");
            let plan = plan.into_optimized_plan().expect("plan");
            let expected = sorted_lines(&collect(&ctx, plan.clone()).await);
            let (narrowed, _) =
                rewritten(&ctx, plan, |plan, run| narrowed_or_same(plan, run, None)).await;
            let finished = finish(narrowed.expect("narrowed"), &ctx.state()).expect("finished");
            let text = finished.display_indent().to_string();
            let lines: Vec<&str> = text.lines().collect();
            let at = lines.iter().position(|l| l.contains(shown));
            let at = at.unwrap_or_else(|| panic!("{shown} not in\n{text}"));
            if filter == "d_week = 1" {
                let below = lines.get(at + 1).copied().unwrap_or_default();
                assert!(below.contains("TableScan: sales"), "{text}");
            } else {
                assert!(!text.contains("Join"), "{text}");
            }
            // Planned as the statement is: no analyzer or optimizer rule runs on it.
            let state = already_optimized(ctx.state());
            let frame = datafusion::dataframe::DataFrame::new(state, finished);
            let rows = frame.collect().await.expect("rows");
            assert_eq!(sorted_lines(&rows), expected, "{text}");
        }
    }

    /// What `predicted_over` says of the job reading `reason`'s keys under `filter`, for a
    /// table of `rows` rows in `mode` whose sample is ten pieces of a line: reasons 1 and 2
    /// `late`, the other eight `lost`.
    async fn reason_keys_left_out(mode: Mode, rows: u64, filter: &str) -> Option<String> {
        // A piece after the first starts with the end of a line it does not hold.
        let pieces = (1..=10u64).map(|i| {
            let desc = if i <= 2 { "late" } else { "lost" };
            let text = format!("{}{i}|AAAA|{desc}|\n", if i == 1 { "" } else { "x|\n" });
            ((i - 1) * 100, bytes::Bytes::from(text))
        });
        let schema = crate::schema::table_schema("reason").expect("a TPC-DS table");
        // Lines of 10 bytes: `rows` rows.
        let objects = vec![("reason/part-00000.dat".to_string(), rows * 10)];
        let mut table = S3Table::new(
            schema,
            objects,
            10.0,
            crate::scan::Store::offline(),
            mode,
            crate::layout::Format::Csv,
        );
        if mode == Mode::Auto {
            let sample = crate::scan::Sample::from_pieces(pieces);
            table = table.with_sample(std::sync::Arc::new(sample), None);
        }
        reason_job_left_out(table, filter).await
    }

    /// What `predicted_over` says of the job reading the keys of `table` (TPC-DS `reason`)
    /// under `filter`.
    async fn reason_job_left_out(table: S3Table, filter: &str) -> Option<String> {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_table("reason", Arc::new(table))
            .expect("registered");
        let source = ctx
            .sql(&format!("SELECT r_reason_sk FROM reason WHERE {filter}"))
            .await
            .expect("sql")
            .into_optimized_plan()
            .expect("plan");
        let keys = KeysOf {
            source,
            key: Column::new(Some("reason"), "r_reason_sk"),
        };
        predicted_over(&keys).expect("predicted")
    }

    #[tokio::test]
    async fn auto_mode_leaves_out_a_job_predicted_to_answer_too_many_keys() {
        // 7 of the 9 pieces left when the one that keeps most is left out (`Sample::kept_rows`):
        // 78% of 100,000 rows, left out, and the plans say why.
        let line = reason_keys_left_out(Mode::Auto, 100_000, "r_reason_desc = 'lost'").await;
        let line = line.expect("left out");
        assert!(
            line.starts_with("Join keys not read: reason.r_reason_sk") && line.contains("~77778"),
            "{line}"
        );
        // 1 of 9 of 10,000 rows fits a job's answer; nothing predicts in dynamic mode, nor over
        // a filter the store does not take (DataFusion applies it over the scan).
        for (mode, rows, filter) in [
            (Mode::Auto, 10_000, "r_reason_desc = 'late'"),
            (Mode::Dynamic, 100_000, "r_reason_desc = 'lost'"),
            (Mode::Auto, 100_000, "md5(r_reason_desc) <> 'x'"),
        ] {
            let line = reason_keys_left_out(mode, rows, filter).await;
            assert_eq!(line, None, "{mode:?} {rows} {filter}");
        }
    }

    /// What `predicted_over` says of the job reading `reason`'s keys under `filter`, for a
    /// Parquet table of `rows` rows whose sample is ten pieces of ten rows, keys 0 to 99 in
    /// order: those of pieces 4 and 7 `late`, the others `lost` (so that neither is a span
    /// of keys).
    async fn parquet_reason_keys_left_out(rows: u64, filter: &str) -> Option<String> {
        use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray};
        use datafusion::arrow::record_batch::RecordBatch;
        let schema = crate::schema::table_schema("reason").expect("a TPC-DS table");
        let columns = Arc::new(crate::schema::arrow_schema(schema));
        let pieces: Vec<RecordBatch> = (0..10)
            .map(|i| {
                let keys = (i * 10)..(i * 10 + 10);
                let desc = if i == 3 || i == 6 { "late" } else { "lost" };
                let columns_of_piece: Vec<ArrayRef> = vec![
                    Arc::new(Int32Array::from_iter_values(keys.clone())),
                    Arc::new(StringArray::from_iter_values(keys.map(|k| format!("R{k}")))),
                    Arc::new(StringArray::from_iter_values([desc; 10])),
                ];
                RecordBatch::try_new(Arc::clone(&columns), columns_of_piece).expect("a piece")
            })
            .collect();
        let sample = crate::scan::Sample::of_parquet_pieces(&pieces, rows, vec![0; 3]);
        let objects = vec![("reason/part-00000.parquet".to_string(), rows * 10)];
        let table = S3Table::new(
            schema,
            objects,
            10.0,
            crate::scan::Store::offline(),
            Mode::Auto,
            crate::layout::Format::Parquet,
        )
        .with_sample(Arc::new(sample), None);
        reason_job_left_out(table, filter).await
    }

    #[tokio::test]
    async fn auto_mode_leaves_out_a_job_whose_distinct_keys_no_list_carries() {
        // 7 of the 9 pieces left when the one that keeps most is left out: 78% of 2,000
        // rows, each its own key, which is more than a list carries and not a range.
        let line = parquet_reason_keys_left_out(2_000, "r_reason_desc = 'lost'").await;
        let line = line.expect("left out");
        assert!(
            line.starts_with("Join keys not read: reason.r_reason_sk")
                && line.contains("~1556 distinct keys, not a range"),
            "{line}"
        );
        // 78% of 1,000 rows fits a list; a span of the keys fits as a range, however long.
        for (rows, filter) in [
            (1_000, "r_reason_desc = 'lost'"),
            (2_000, "r_reason_sk >= 20"),
        ] {
            let line = parquet_reason_keys_left_out(rows, filter).await;
            assert_eq!(line, None, "{rows} {filter}");
        }
    }

    #[tokio::test]
    async fn outer_and_anti_joins_unfiltered_sides_and_long_lists_are_left() {
        for (sql, jobs_run) in [
            // The dimension is the preserved side of an outer join: no job.
            (
                "SELECT amount, d_week FROM sales LEFT JOIN \
                 (SELECT * FROM dates WHERE d_week = 1) d ON date = d_date",
                0,
            ),
            (
                "SELECT amount FROM sales WHERE date NOT IN \
              (SELECT d_date FROM dates WHERE d_week = 1)",
                0,
            ),
            // Nothing filters the dimension: its keys would cut nothing.
            ("SELECT amount FROM sales JOIN dates ON date = d_date", 0),
        ] {
            let (plan, same, jobs) = narrowed(sql, None).await;
            assert_eq!(jobs, jobs_run, "{sql}: {plan}");
            assert!(!plan.contains(" IN ("), "{plan}");
            assert!(same, "{plan}");
        }
        // A list longer than the store takes is read and left out.
        let sql = "SELECT amount FROM sales JOIN dates ON date = d_date WHERE d_week = 1";
        let (plan, same, jobs) = narrowed(sql, Some(8)).await;
        assert_eq!(jobs, 1);
        assert!(!plan.contains(" IN ("), "{plan}");
        assert!(same, "{plan}");
    }
}
