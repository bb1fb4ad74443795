//! A finished job's stage plans with their metrics, from the scheduler's REST API
//! (`GET /api/job/{id}/stages?plan_format=metrics`): the executed plan of a distributed
//! statement, and its join tree.

use serde::Deserialize;

use crate::cluster::SchedulerUrl;
use crate::error::{Error, Result};
use crate::plan_text::scanned_table;

#[derive(Debug, Deserialize)]
struct Stages {
    stages: Vec<Stage>,
}

#[derive(Debug, Deserialize)]
struct Stage {
    stage_id: String,
    stage_status: String,
    stage_plan: Option<String>,
}

/// The stage plans of job `job_id`, each under a `Stage N (status):` line, in stage order.
pub async fn plans(scheduler: &SchedulerUrl, job_id: &str) -> Result<String> {
    let url = format!(
        "{}/api/job/{job_id}/stages?plan_format=metrics",
        scheduler.http()
    );
    let body = crate::net::http_get(&url).await?;
    let mut stages: Stages = serde_json::from_slice(&body)
        .map_err(|e| Error::Invalid(format!("{url}: not a stages answer: {e}")))?;
    stages
        .stages
        .sort_by_key(|s| s.stage_id.parse::<u64>().unwrap_or(u64::MAX));
    let mut text = String::new();
    for stage in stages.stages {
        text.push_str(&format!(
            "Stage {} ({}):\n",
            stage.stage_id, stage.stage_status
        ));
        text.push_str(stage.stage_plan.as_deref().unwrap_or("(not started)\n"));
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

/// The joins and scanned tables of `plans`, in the order they appear: a distributed plan's
/// counterpart of [`crate::scan::join_tree`], compared across modes in the same way.
pub fn join_tree(plans: &str) -> String {
    plans
        .lines()
        .filter_map(|line| {
            let node = line.trim_start();
            let name = node.split([':', ' ']).next()?;
            if let Some(table) = scanned_table(node) {
                return Some(table.to_string());
            }
            name.contains("Join").then(|| name.to_string())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::plan_text::tests::PLANS;

    #[test]
    fn joins_and_tables_in_order() {
        assert_eq!(join_tree(PLANS), "date_dim HashJoinExec store_sales");
    }
}
