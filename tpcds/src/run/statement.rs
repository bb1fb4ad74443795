//! One statement run and planned: in this process or as Ballista jobs, with the parts the
//! run-time filter modes run first, a hash join's refusal retried with sort-merge joins,
//! and its executed plan kept with its metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ballista_core::execution_plans::DistributedQueryExec;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{self, display::DisplayableExecutionPlan};
use datafusion_proto::protobuf::LogicalPlanNode;
use futures::FutureExt;

use super::session::Cluster;
use crate::cluster::{keys, stages, subqueries};
use crate::scan::join_tree;

/// Parts of a statement that run before it, their answers going into it as literals: the
/// run-time filter modes' filters that reach a scan whatever the joins and stages between
/// ([`parts_first`]).
#[derive(Clone, Copy)]
pub(super) struct PartsFirst {
    /// The longest join-key list the store takes, in bytes of SQL (`cluster::keys`).
    pub(super) key_list_budget: Option<usize>,
}

/// Queries whose hash joins build one string array over 2 GiB at SF 1 (`Arrow error: Offset
/// overflow error`); they run with sort-merge joins instead, as the issue suggests.
const SORT_MERGE_QUERIES: [u32; 1] = [72];

/// A statement's executed plan.
pub(super) struct Plan {
    /// The plan with DataFusion's metrics (`plans/<mode>/qN.txt`); on a cluster, its stages'.
    pub(super) text: String,
    /// Its join tree, compared across modes.
    pub(super) joins: String,
    /// On a cluster, its scans' response bytes and the object bytes the store read.
    pub(super) bytes_received: u64,
    pub(super) bytes_scanned: u64,
}

/// A statement's rows (a failure is its result, as text) and its executed plan, when it got
/// as far as a plan.
type Planned = (std::result::Result<Vec<RecordBatch>, String>, Option<Plan>);

/// One statement's run.
pub(super) struct StatementRun {
    /// Its rows; a failure is the statement's result, reported as text.
    pub(super) rows: std::result::Result<Vec<RecordBatch>, String>,
    /// Its executed plan, when it got as far as a plan.
    pub(super) plan: Option<Plan>,
    /// Whether it ran again with sort-merge joins, a hash join's build side not fitting in a
    /// memory pool: the client's (`--memory-limit`) or, on a cluster, an executor's.
    pub(super) sort_merge_retry: bool,
}

/// One statement of query `n`, to run in `ctx` (on `cluster`'s executors, if any), with
/// the parts the run-time filter modes run `first`.
#[derive(Clone, Copy)]
pub(super) struct Statement<'a> {
    pub(super) ctx: &'a SessionContext,
    pub(super) sql: &'a str,
    pub(super) n: u32,
    pub(super) cluster: Option<&'a Cluster>,
    pub(super) first: Option<PartsFirst>,
}

impl Statement<'_> {
    /// Runs it, with hash joins unless it is one of [`SORT_MERGE_QUERIES`] or a hash join's
    /// build side does not fit ([`StatementRun::sort_merge_retry`]).
    pub(super) async fn run(self) -> StatementRun {
        let done = |(rows, plan): Planned, sort_merge_retry| StatementRun {
            rows,
            plan,
            sort_merge_retry,
        };
        if SORT_MERGE_QUERIES.contains(&self.n) {
            return done(self.with_sort_merge_joins().await, false);
        }
        match self.planned().await {
            (Err(e), _) if hash_join_refused(&e) => done(self.with_sort_merge_joins().await, true),
            planned => done(planned, false),
        }
    }

    /// Runs it with sort-merge joins, which sort (and spill) their inputs instead of holding
    /// a build side in memory; the session's own choice is restored after.
    async fn with_sort_merge_joins(self) -> Planned {
        let ctx = self.ctx;
        let before = ctx.copied_config().options().optimizer.prefer_hash_join;
        if let Err(e) = set_prefer_hash_join(ctx, false).await {
            return (Err(e), None);
        }
        let (result, plan) = self.planned().await;
        match set_prefer_hash_join(ctx, before).await {
            Ok(()) => (result, plan),
            Err(e) => (Err(e), plan),
        }
    }

    /// Plans and runs it, with what runs first; its plan, with the metrics of the run (on a
    /// cluster, its stages' from the scheduler).
    async fn planned(self) -> Planned {
        let Statement {
            ctx,
            sql,
            n,
            cluster,
            first,
        } = self;
        let planning =
            |e: DataFusionError| format!("q{n}: planning failed: {}", first_line(&e.to_string()));
        let started = Instant::now();
        let frame = match ctx.sql(sql).await {
            Ok(frame) => frame,
            Err(e) => return (Err(planning(e)), None),
        };
        // The plans of the jobs that ran parts of the statement first, if any.
        let (frame, run_first) = match first {
            Some(first) => match parts_first(ctx, frame, cluster, first).await {
                Ok(done) => done,
                Err(e) => {
                    let e = e.to_string();
                    let e = format!(
                        "q{n}: a part run first failed: {}",
                        without_job(first_line(&e))
                    );
                    return (Err(e), None);
                }
            },
            None => (frame, String::new()),
        };
        let parts_first_done = Instant::now();
        let plan = match frame.create_physical_plan().await {
            Ok(plan) => plan,
            Err(e) => return (Err(planning(e)), None),
        };
        let planned = Instant::now();
        let rows = physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
            .await
            .map_err(|e| {
                let e = e.to_string();
                format!("q{n}: execution failed: {}", without_job(first_line(&e)))
            });
        let times = StatementTimes {
            until_planned: parts_first_done.duration_since(started),
            planning: planned.duration_since(parts_first_done),
            running: planned.elapsed(),
            parts_first: first.is_some(),
        };
        let local = || {
            DisplayableExecutionPlan::with_metrics(plan.as_ref())
                .indent(true)
                .to_string()
        };
        let job = plan
            .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
            .and_then(|exec| exec.job_id());
        let (text, joins) = match (cluster, job) {
            (Some(cluster), Some(job)) => match stages::plans(&cluster.url, job.as_ref()).await {
                Ok(text) => {
                    let joins = stages::join_tree(&text);
                    (run_first + &text, joins)
                }
                Err(e) => {
                    return (
                        Err(format!("q{n}: the stage plans of job {job}: {e}")),
                        None,
                    )
                }
            },
            // A statement the planner answered without a job (its subqueries' answers made it
            // empty) ran here.
            _ => (run_first + &local(), join_tree(&plan)),
        };
        let text = format!("{times}\n{text}");
        let (bytes_received, bytes_scanned) = match cluster {
            Some(_) => {
                let uncounted = crate::plan_text::uncounted_scans(&text);
                if uncounted > 0 {
                    eprintln!(
                        "warning: q{n}: {uncounted} scans came back from the scheduler without \
                         metrics; their bytes are not counted"
                    );
                }
                (
                    crate::plan_text::scan_metric(&text, "bytes_received"),
                    crate::plan_text::scan_metric(&text, "bytes_scanned"),
                )
            }
            None => (0, 0),
        };
        (
            rows,
            Some(Plan {
                text,
                joins,
                bytes_received,
                bytes_scanned,
            }),
        )
    }
}

/// Where a statement's time went, as the first line of its plan text: until its logical
/// plan was final (SQL planning, and the parts run first), physical planning, and running.
struct StatementTimes {
    until_planned: Duration,
    planning: Duration,
    running: Duration,
    /// Whether parts of the statement ran before it (the first time includes them).
    parts_first: bool,
}

impl std::fmt::Display for StatementTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let first = match self.parts_first {
            true => "SQL planned and parts run first",
            false => "SQL planned",
        };
        write!(
            f,
            "Statement time: {first} {:.1} ms, physical plan {:.1} ms, run {:.1} ms",
            ms(self.until_planned),
            ms(self.planning),
            ms(self.running)
        )
    }
}

/// Whether a statement failed because a hash join's build side did not fit in the memory
/// pool: DataFusion's hash join does not spill, and says `Resources exhausted`.
fn hash_join_refused(error: &str) -> bool {
    error.contains("Resources exhausted") && error.contains("HashJoin")
}

async fn set_prefer_hash_join(ctx: &SessionContext, on: bool) -> std::result::Result<(), String> {
    let sql = format!("SET datafusion.optimizer.prefer_hash_join = {on}");
    ctx.sql(&sql)
        .await
        .map_err(|e| format!("{sql}: {}", first_line(&e.to_string())))?;
    Ok(())
}

/// `frame` with parts of it run first, the run-time filter modes' way to filters that reach
/// a scan across joins and stages: on a cluster its uncorrelated subqueries, replaced by
/// their answers (`cluster::subqueries`); then, on a cluster or not, its filtered
/// dimensions' join keys, put as filters on the sides they join (`cluster::keys`). Also
/// those jobs' plans, each under a line naming what it ran (`Subquery run first, job ID:`
/// or `Join keys read first`), in the order they finished.
async fn parts_first(
    ctx: &SessionContext,
    frame: DataFrame,
    cluster: Option<&Cluster>,
    first: PartsFirst,
) -> std::result::Result<(DataFrame, String), DataFusionError> {
    let plans = std::sync::Mutex::new(String::new());
    let runner = |what: &'static str| {
        let plans = &plans;
        move |plan: LogicalPlan| {
            async move {
                let physical = ctx.state().create_physical_plan(&plan).await?;
                let rows = physical_plan::collect(Arc::clone(&physical), ctx.task_ctx()).await?;
                let job = physical
                    .downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()
                    .and_then(|exec| exec.job_id());
                let text = match (cluster, job) {
                    (Some(cluster), Some(job)) => {
                        let stages = stages::plans(&cluster.url, job.as_ref())
                            .await
                            .map_err(|e| DataFusionError::External(Box::new(e)))?;
                        format!("{what}, job {job}:\n{stages}")
                    }
                    _ => format!(
                        "{what}:\n{}",
                        DisplayableExecutionPlan::with_metrics(physical.as_ref()).indent(true)
                    ),
                };
                if let Ok(mut plans) = plans.lock() {
                    plans.push_str(&text);
                }
                Ok(rows)
            }
            .boxed()
        }
    };
    let run_subquery = runner("Subquery run first");
    let plan = match cluster {
        Some(_) => subqueries::run_first(frame.into_unoptimized_plan(), &run_subquery).await?,
        None => frame.into_unoptimized_plan(),
    };
    let read_keys = runner("Join keys read first");
    // The statement is planned again from the narrowed plan, and on a cluster an optimized
    // plan optimized again does not always survive Ballista's protobuf round trip to the
    // scheduler (q32's decorrelated subquery): such a statement goes as it was, and reads
    // no keys it could not use. The narrowed plan is checked too, as it has filters more.
    let sendable = |plan: &LogicalPlan| -> std::result::Result<bool, DataFusionError> {
        Ok(match cluster {
            Some(cluster) => round_trips(ctx, &ctx.state().optimize(plan)?, cluster),
            None => true,
        })
    };
    let optimized = ctx.state().optimize(&plan)?;
    let narrowed = match sendable(&optimized)? {
        true => {
            let runs_in = match cluster {
                Some(_) => keys::RunsIn::Cluster,
                None => keys::RunsIn::Process,
            };
            keys::narrow(
                optimized.clone(),
                &read_keys,
                first.key_list_budget,
                runs_in,
            )
            .await?
        }
        false => keys::Narrowed::default(),
    };
    let frame = match cluster {
        // In this process the plan optimized here is planned as it is, its key lists put
        // in place by the few rules they need: the whole optimizer run again would redo
        // what it already did, a cost of the run-time filter modes that fetch does not pay
        // (docs/BENCHMARKS.md, "a plan optimized once").
        None => {
            let state = ctx.state();
            let plan = match narrowed.plan {
                Some(narrowed) => keys::finish(narrowed, &state)?,
                None => optimized,
            };
            DataFrame::new(keys::already_optimized(state), plan)
        }
        Some(_) => match narrowed.plan {
            Some(narrowed) if sendable(&narrowed)? => DataFrame::new(ctx.state(), narrowed),
            _ => DataFrame::new(ctx.state(), plan),
        },
    };
    let mut plans = plans.into_inner().unwrap_or_default();
    plans.extend(narrowed.not_read);
    Ok((frame, plans))
}

/// Whether `plan` comes back from protobuf as the scheduler will decode it.
fn round_trips(ctx: &SessionContext, plan: &LogicalPlan, cluster: &Cluster) -> bool {
    use datafusion_proto::logical_plan::AsLogicalPlan;
    LogicalPlanNode::try_from_logical_plan(plan, cluster.codec.as_ref())
        .and_then(|node| node.try_into_logical_plan(&ctx.task_ctx(), cluster.codec.as_ref()))
        .is_ok()
}

/// A Ballista job's error without the job's id and stage number (`Job 038HMGFCP4000 failed:
/// Job failed due to stage 7 failed: …` → `Job failed: …`), which differ from run to run
/// and from mode to mode while the error is the same.
fn without_job(text: &str) -> String {
    const STAGE: &str = " failed: Task failed due to runtime execution error: ";
    match (text.find("Job "), text.find(STAGE)) {
        (Some(start), Some(end)) if start < end => {
            format!(
                "{}Job failed: {}",
                &text[..start],
                &text[end + STAGE.len()..]
            )
        }
        _ => text.to_string(),
    }
}

/// DataFusion appends a backtrace to some errors; the first line is the error.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

/// The sum of metric `name` over a query's plans.
pub(super) fn plan_total<'a>(plans: impl Iterator<Item = &'a Plan>, name: &str) -> u64 {
    plans
        .map(|plan| crate::plan_text::total(&plan.text, name))
        .sum()
}

/// The scans of `plans` that auto mode pushed down (`pushed`) or fetched, as the plans show
/// its choices (`auto=pushed …`).
pub(super) fn scans_chosen<'a>(plans: impl Iterator<Item = &'a Plan>, pushed: bool) -> u64 {
    let shown = if pushed {
        ", auto=pushed"
    } else {
        ", auto=fetched"
    };
    plans
        .map(|plan| plan.text.matches(shown).count() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_not_part_of_an_error() {
        assert_eq!(
            without_job(
                "Execution error: Job 038HMGFCP4000 failed: Job failed due to stage 7 failed: \
                 Task failed due to runtime execution error: DataFusionError(DivideByZero)"
            ),
            "Execution error: Job failed: DataFusionError(DivideByZero)"
        );
        assert_eq!(
            without_job("Arrow error: Divide by zero error"),
            "Arrow error: Divide by zero error"
        );
    }

    #[test]
    fn only_a_hash_join_out_of_memory_is_retried() {
        let refused = "Resources exhausted: Additional allocation failed for HashJoinInput[3] \
                       with top memory consumers (across reservations) as: ...";
        assert!(hash_join_refused(refused));
        assert!(!hash_join_refused(
            "Resources exhausted: Failed to allocate for ExternalSorter[0]"
        ));
        assert!(!hash_join_refused("HashJoin: schema mismatch"));
    }
}
