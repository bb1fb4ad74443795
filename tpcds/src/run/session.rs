//! A mode's DataFusion session: in this process, or on a Ballista cluster with what Sift's
//! scans need there; the tables registered with their key statistics.

use std::sync::Arc;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::config::BALLISTA_SCHEDULER_MAX_PARTITIONS_PER_TASK;
use datafusion::execution::context::SessionContext;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionConfig;

use super::setup::TableData;
use super::RunOptions;
use crate::cluster::{SchedulerUrl, SiftCodec};
use crate::error::{Error, Result};
use crate::scan::{with_key_statistics, Mode, S3Table, Store};

/// On a cluster, the largest estimated build side of a hash join that is broadcast to its
/// probe tasks rather than shuffled with the probe side (see [`session`]), in bytes and rows.
const BROADCAST_BYTES: usize = 16 << 20;
const BROADCAST_ROWS: usize = 1 << 20;

/// The Ballista cluster a run submits its statements to.
#[derive(Clone)]
pub(super) struct Cluster {
    pub(super) url: SchedulerUrl,
    pub(super) codec: Arc<SiftCodec>,
}

/// The session a mode's statements run in.
pub(super) async fn session(
    store: &Arc<Store>,
    tables: &[TableData],
    mode: Mode,
    options: &RunOptions,
    cluster: Option<&Cluster>,
) -> Result<SessionContext> {
    let (format, memory_limit) = (options.format, options.memory_limit);
    let partitions = options.partitions.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    });
    let mut config = match cluster {
        None => SessionConfig::new(),
        // Remote shuffle reads over Arrow Flight: Ballista 55's default block reader skips
        // IPC validation and failed on unaligned buffers ("Ipc error: … Unaligned"), after
        // which the resubmitted stage never finished and the query hung.
        //
        // Ballista's static planner, not its adaptive one (its default): the adaptive planner
        // re-plans a job after each stage and drops what it then believes empty, and it
        // answered TPC-DS q49 with no rows at SF 1 (docs/cluster.md). The static planner
        // plans each job once, from the plan a single process would run.
        //
        // One partition per task: by default Ballista's scheduler packs as many of a stage's
        // partitions into one task as the executor it picks has free slots, so a scan of
        // two partitions ran as one task on one executor behind one link whatever the
        // scheduler's `--task-distribution`. One per task lets the scheduler deal them.
        Some(cluster) => SessionConfig::new_with_ballista()
            .with_ballista_logical_extension_codec(Arc::clone(&cluster.codec) as _)
            .with_ballista_physical_extension_codec(Arc::clone(&cluster.codec) as _)
            .with_ballista_shuffle_reader_remote_prefer_flight(true)
            .with_ballista_adaptive_query_planner(false)
            .set_u64(BALLISTA_SCHEDULER_MAX_PARTITIONS_PER_TASK, 1),
    }
    .with_target_partitions(partitions)
    .with_information_schema(false);
    // Only hash joins' dynamic filters are final before their consumer runs (the join builds
    // first, then probes). A TopK's or an aggregate's filter tightens while the scan it
    // prunes is still being read, so a scan that waited for it to be complete would wait
    // for itself; they are off in every mode, so the modes keep identical plans.
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.enable_topk_dynamic_filter_pushdown = false;
    optimizer.enable_aggregate_dynamic_filter_pushdown = false;
    if let Some(limit) = memory_limit {
        // An external sort holds this much back to merge its spill files, per partition:
        // DataFusion's 10 MiB assumes a pool of gigabytes, and a smaller pool failed every
        // sort that spilled ("Not enough memory to continue external sort").
        let execution = &mut config.options_mut().execution;
        let share = usize::try_from(limit / 16).unwrap_or(usize::MAX);
        execution.sort_spill_reservation_bytes = execution.sort_spill_reservation_bytes.min(share);
    }
    // A Ballista task runs its share of a stage's partitions on its own; a file scan that
    // let one partition's stream take another's files (DataFusion's default, which balances
    // a single process) would read them in a task that does not own them, and another task
    // would read them again or not at all (q71's sums came back halved).
    if cluster.is_some() {
        config
            .options_mut()
            .execution
            .enable_file_stream_work_stealing = false;
        let optimizer = &mut config.options_mut().optimizer;
        // Hash joins, as in one process (Ballista's session defaults to sort-merge joins,
        // which its adaptive planner would replace from measured sizes, but its static
        // planner keeps): only a hash join fills a run-time filter, and the modes of a
        // cluster run then plan as a single process does. A build side an executor's pool
        // refuses is run again with sort-merge joins, as under the client's own pool.
        optimizer.prefer_hash_join = true;
        // A join's run-time filter reaches its probe scan only within a stage. A join that
        // collects its build side (`CollectLeft`: the build side broadcast to every probe
        // task) probes the scan right below it, in the same task; a partitioned join
        // shuffles the probe side, so its scan ran in an earlier stage, unfiltered. On a
        // cluster, build sides estimated up to BROADCAST_BYTES are therefore collected,
        // where DataFusion's 1 MB default (made for one process, where a filter reaches
        // through partitioned joins too) partitions the joins of most dimensions at SF 1.
        optimizer.hash_join_single_partition_threshold = optimizer
            .hash_join_single_partition_threshold
            .max(BROADCAST_BYTES);
        optimizer.hash_join_single_partition_threshold_rows = optimizer
            .hash_join_single_partition_threshold_rows
            .max(BROADCAST_ROWS);
    }
    let ctx = match cluster {
        None => {
            let mut runtime = RuntimeEnvBuilder::new();
            if let Some(limit) = memory_limit {
                // Fair shares: every spilling operator of a statement gets an equal part,
                // rather than the first one taking the pool from the rest.
                let bytes = usize::try_from(limit).unwrap_or(usize::MAX);
                runtime = runtime.with_memory_pool(Arc::new(FairSpillPool::new(bytes)));
            }
            SessionContext::new_with_config_rt(config, runtime.build_arc()?)
        }
        Some(cluster) => {
            let state = SessionStateBuilder::new()
                .with_config(config)
                .with_default_features()
                .build();
            SessionContext::remote_with_state(&cluster.url.http(), state)
                .await
                .map_err(|e| Error::Invalid(format!("--scheduler {}: {e}", cluster.url)))?
        }
    };
    let providers = tables.iter().map(|table| {
        let provider = S3Table::new(
            table.schema,
            table.objects.clone(),
            table.line_bytes,
            Arc::clone(store),
            mode,
            format,
        );
        match (&table.sample, mode) {
            (Some(sample), Mode::Auto) => {
                provider.with_sample(Arc::clone(sample), options.link_rate)
            }
            _ => provider,
        }
    });
    for provider in with_key_statistics(providers.collect()) {
        ctx.register_table(provider.name(), Arc::new(provider))?;
    }
    Ok(ctx)
}

/// Runs a count of the smallest table on the cluster before any query is timed: a cluster
/// whose executors cannot decode Sift's scans (another version of sift) or reach the store
/// would otherwise fail every query, in every mode alike.
pub(super) async fn cluster_runs_a_scan(
    ctx: &SessionContext,
    tables: &[TableData],
    scheduler: &SchedulerUrl,
) -> Result<()> {
    let size = |t: &&TableData| t.objects.iter().map(|(_, size)| size).sum::<u64>();
    let Some(smallest) = tables.iter().min_by_key(size) else {
        return Ok(());
    };
    let sql = format!("SELECT COUNT(*) FROM {}", smallest.schema.name);
    let counted = async { ctx.sql(&sql).await?.collect().await };
    counted.await.map(|_| ()).map_err(|e| Error::Flag {
        flag: "--scheduler",
        message: format!("{scheduler}: the cluster could not run `{sql}`: {e}"),
    })
}
