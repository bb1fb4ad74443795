//! Ballista's scheduler and executor, started with [`SiftCodec`] registered: `sift tpcds
//! scheduler` and `sift tpcds executor`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use aws_config::SdkConfig;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::start_server;

use crate::cluster::engine::SiftEngine;
use crate::cluster::{SchedulerUrl, SiftCodec};
use crate::error::{Error, Result};

/// What a scheduler is told on its command line.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// gRPC and the REST API.
    pub bind: SocketAddr,
    /// Seconds without a heartbeat after which an executor counts as lost and its tasks run
    /// elsewhere (default: Ballista's, 180).
    pub executor_timeout: Option<u64>,
    /// How a stage's tasks are placed on the executors.
    pub task_distribution: TaskDistribution,
}

/// How the scheduler places a stage's tasks. Ballista's default, `Bias`, fills one
/// executor's free slots before the next's, so a scan of two tasks runs on one host behind
/// one link; `RoundRobin` deals them one per executor in turn, so a link-bound scan uses
/// every executor host's link. (The client asks for one partition per task; otherwise the
/// scheduler packs a stage's partitions into one task on one executor under either.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskDistribution {
    Bias,
    #[default]
    RoundRobin,
}

/// Runs a scheduler until the process ends.
pub async fn scheduler(options: SchedulerOptions, shared: SdkConfig) -> Result<()> {
    let bind = options.bind;
    let codec = Arc::new(SiftCodec::new(shared));
    let mut config = SchedulerConfig {
        bind_host: bind.ip().to_string(),
        bind_port: bind.port(),
        external_host: bind.ip().to_string(),
        override_logical_codec: Some(Arc::clone(&codec) as _),
        override_physical_codec: Some(codec as _),
        task_distribution: match options.task_distribution {
            TaskDistribution::Bias => TaskDistributionPolicy::Bias,
            TaskDistribution::RoundRobin => TaskDistributionPolicy::RoundRobin,
        },
        ..SchedulerConfig::default()
    };
    if let Some(timeout) = options.executor_timeout {
        config.executor_timeout_seconds = timeout;
        // Look for lost executors a few times per timeout, not only every 15 s.
        config.expire_dead_executor_interval_seconds = config
            .expire_dead_executor_interval_seconds
            .min((timeout / 4).max(1));
    }
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| Error::Invalid(format!("scheduler: {e}")))?;
    start_server(cluster, bind, Arc::new(config))
        .await
        .map_err(|e| Error::Invalid(format!("scheduler on {bind}: {e}")))
}

/// What an executor is told on its command line.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub scheduler: SchedulerUrl,
    /// Its Arrow Flight address (shuffle data, results); its gRPC port is the next one.
    pub bind: SocketAddr,
    /// The memory pool of its tasks, spilling to `work_dir` beyond it.
    pub memory_limit: Option<u64>,
    /// Shuffle files and spills (default: a temporary directory).
    pub work_dir: Option<PathBuf>,
    /// Tasks at once (default: the cores).
    pub slots: Option<usize>,
    /// Seconds between its heartbeats to the scheduler (default: Ballista's, 60).
    pub heartbeat_interval: Option<u64>,
}

/// Runs an executor of the scheduler's until the process ends or the scheduler stops it.
pub async fn executor(options: ExecutorOptions, shared: SdkConfig) -> Result<()> {
    let codec = Arc::new(SiftCodec::new(shared));
    let grpc_port = options.bind.port().checked_add(1).ok_or_else(|| {
        Error::Invalid(format!(
            "--bind {}: the gRPC port (the next one) is past 65535",
            options.bind
        ))
    })?;
    let ip = options.bind.ip();
    let mut config = ExecutorProcessConfig {
        bind_host: ip.to_string(),
        external_host: (!ip.is_unspecified()).then(|| ip.to_string()),
        port: options.bind.port(),
        grpc_port,
        scheduler_host: options.scheduler.host.clone(),
        scheduler_port: options.scheduler.port,
        scheduler_connect_timeout_seconds: 20,
        work_dir: options
            .work_dir
            .as_ref()
            .map(|dir| dir.display().to_string()),
        memory_pool_size: options.memory_limit,
        override_logical_codec: Some(Arc::clone(&codec) as _),
        override_physical_codec: Some(codec as _),
        override_execution_engine: Some(Arc::new(SiftEngine::default())),
        ..ExecutorProcessConfig::default()
    };
    if let Some(slots) = options.slots {
        config.vcores = slots.max(1);
    }
    if let Some(seconds) = options.heartbeat_interval {
        config.executor_heartbeat_interval_seconds = seconds.max(1);
    }
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| Error::Invalid(format!("executor of {}: {e}", options.scheduler)))
}
