//! TPC-DS on a Ballista cluster: the `run` client submits each statement to a Ballista
//! scheduler, which plans it and hands its stages to executors; the executors' scans send
//! their GETs and SelectObjectContent requests straight to the storage endpoints, so no
//! table data passes through the scheduler or the client (only query results, from the last
//! stage's executors to the client).
//!
//! Sift adds nothing to Ballista but its table and scan ([`SiftCodec`]): `sift tpcds
//! scheduler` and `sift tpcds executor` are Ballista's own processes with that codec
//! registered ([`process`]), so Ballista's deployment, scheduling and task retries apply as
//! they are. The client reads each job's stage plans, with their metrics, back from the
//! scheduler's REST API ([`stages`]): they are the `plans/` of a distributed run and the
//! source of its byte counts, which the executors measured.

mod codec;
mod engine;
pub(crate) mod keys;
pub mod process;
pub mod stages;
pub(crate) mod subqueries;
#[cfg(test)]
mod test_tables;

use std::fmt;

pub use codec::SiftCodec;

use crate::error::Error;

/// Checks, before any query, that a Ballista scheduler of this client's version answers at
/// `url` and has executors: a run whose scheduler is down would otherwise fail every query,
/// and one without executors would wait for ever.
pub async fn check(url: &SchedulerUrl) -> Result<(), Error> {
    let flag = |message: String| Error::Flag {
        flag: "--scheduler",
        message: format!("{url}: {message}"),
    };
    let version = crate::net::http_get(&format!("{}/api/version", url.http()))
        .await
        .map_err(|e| flag(format!("no Ballista scheduler answers: {e}")))?;
    let version: serde_json::Value = serde_json::from_slice(&version)
        .map_err(|e| flag(format!("not a Ballista scheduler's version: {e}")))?;
    let theirs = version["version"].as_str().unwrap_or("unknown");
    if theirs != ballista_core::BALLISTA_VERSION {
        return Err(flag(format!(
            "the scheduler runs Ballista {theirs}, this client Ballista {}: run the same \
             version of sift for `run`, the scheduler and every executor",
            ballista_core::BALLISTA_VERSION
        )));
    }
    let executors = crate::net::http_get(&format!("{}/api/executors", url.http()))
        .await
        .map_err(|e| flag(format!("the scheduler's executors: {e}")))?;
    let executors: Vec<serde_json::Value> = serde_json::from_slice(&executors)
        .map_err(|e| flag(format!("not a list of executors: {e}")))?;
    if executors.is_empty() {
        return Err(flag(
            "no executor has registered with the scheduler: start them with \
             `sift tpcds executor --scheduler URL`"
                .into(),
        ));
    }
    Ok(())
}

/// Ballista's default scheduler port.
pub const DEFAULT_SCHEDULER_PORT: u16 = 50050;

/// A scheduler's address, from `http://HOST:PORT` or Ballista's own `df://HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerUrl {
    pub host: String,
    pub port: u16,
}

impl SchedulerUrl {
    pub fn parse(text: &str) -> Result<SchedulerUrl, String> {
        let rest = ["http://", "df://"]
            .iter()
            .find_map(|scheme| text.strip_prefix(scheme))
            .ok_or_else(|| {
                format!(
                    "{text:?} is not a scheduler URL: expected http://HOST:PORT or df://HOST:PORT"
                )
            })?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| format!("{text:?}: the port {port:?} is not a port number"))?;
                (host, port)
            }
            _ => (rest, DEFAULT_SCHEDULER_PORT),
        };
        if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
            return Err(format!("{text:?}: no host name, or more than HOST:PORT"));
        }
        Ok(SchedulerUrl {
            host: host.to_string(),
            port,
        })
    }

    /// The URL Ballista's client and the REST API are reached at.
    pub fn http(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }
}

impl fmt::Display for SchedulerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.http())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_urls() {
        let url = |host: &str, port| SchedulerUrl {
            host: host.into(),
            port,
        };
        assert_eq!(
            SchedulerUrl::parse("http://10.0.0.1:50050"),
            Ok(url("10.0.0.1", 50050))
        );
        assert_eq!(
            SchedulerUrl::parse("df://sched:6000/"),
            Ok(url("sched", 6000))
        );
        assert_eq!(
            SchedulerUrl::parse("df://sched"),
            Ok(url("sched", DEFAULT_SCHEDULER_PORT))
        );
        for bad in [
            "sched:50050",
            "https://sched:1",
            "http://:1",
            "http://h:0",
            "http://h:x",
            "df://h/p",
        ] {
            assert!(SchedulerUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
