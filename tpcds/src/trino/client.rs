//! A client of Trino's statement protocol, the HTTP API its CLI and JDBC driver speak:
//! `POST /v1/statement` with the SQL, then `GET` each `nextUri` until the answer has none.
//! Every answer may carry column names and types, rows (`data`, JSON values), the query's
//! statistics, and, once it failed, an `error`.
//!
//! Talking the protocol directly rather than running the CLI once per query keeps a JVM
//! start out of every query's time and gives typed values: decimals arrive as strings in
//! their type's scale, doubles as JSON numbers, NULL as `null`.

use std::time::Duration;

use http::{Method, Request, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// One server and the session every statement runs in.
pub struct TrinoClient {
    server: String,
    user: String,
    catalog: String,
    schema: String,
    /// `X-Trino-Session` properties, e.g. `hive.s3_select_pushdown_enabled=true`.
    session: Vec<String>,
    http: Client<hyper_util::client::legacy::connect::HttpConnector, String>,
}

/// A statement's answer.
#[derive(Debug, Default)]
pub struct Answer {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
    pub stats: Stats,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Column {
    pub name: String,
    /// Trino's type, e.g. `decimal(17,2)`, `varchar`, `double`, `bigint`.
    #[serde(rename = "type")]
    pub type_name: String,
}

/// The statistics of the last answer of a statement (Trino's `StatementStats`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stats {
    pub state: String,
    pub elapsed_time_millis: u64,
    pub cpu_time_millis: u64,
    pub processed_rows: u64,
    /// Bytes the table scans read: object bytes on GET, S3 Select's returned bytes on a
    /// pushed-down scan.
    pub physical_input_bytes: u64,
    pub processed_bytes: u64,
    pub peak_memory_bytes: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    next_uri: Option<String>,
    columns: Option<Vec<Column>>,
    data: Option<Vec<Vec<Value>>>,
    #[serde(default)]
    stats: Stats,
    error: Option<QueryError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueryError {
    message: String,
    error_name: Option<String>,
}

/// Trino answers 503 while it is busy or starting: the protocol says to wait and ask again.
const BUSY_RETRIES: u32 = 100;

impl TrinoClient {
    /// `server` is `http://HOST:PORT`.
    pub fn new(server: &str, user: &str, catalog: &str, schema: &str) -> Result<TrinoClient> {
        let server = server.trim_end_matches('/').to_string();
        if !server.starts_with("http://") {
            return Err(Error::Flag {
                flag: "--server",
                message: format!("{server:?}: give http://HOST:PORT"),
            });
        }
        Ok(TrinoClient {
            server,
            user: user.into(),
            catalog: catalog.into(),
            schema: schema.into(),
            session: Vec::new(),
            http: Client::builder(TokioExecutor::new()).build_http(),
        })
    }

    /// Sets a session property (`catalog.name=value` for a connector's) for every later
    /// statement.
    pub fn set_session(&mut self, property: &str, value: &str) {
        self.session
            .retain(|p| !p.starts_with(&format!("{property}=")));
        self.session.push(format!("{property}={value}"));
    }

    /// Runs one statement (no trailing `;`) and collects its whole answer; a statement
    /// Trino failed is an [`Error::Invalid`] with Trino's error name and message.
    pub async fn execute(&self, sql: &str) -> Result<Answer> {
        let mut page = self
            .send(Method::POST, &format!("{}/v1/statement", self.server), sql)
            .await?;
        let mut answer = Answer::default();
        loop {
            if let Some(error) = page.error {
                let name = error.error_name.unwrap_or_default();
                return Err(Error::Invalid(format!("Trino {name}: {}", error.message)));
            }
            if answer.columns.is_empty() {
                if let Some(columns) = page.columns {
                    answer.columns = columns;
                }
            }
            if let Some(data) = page.data {
                answer.rows.extend(data);
            }
            answer.stats = page.stats;
            match page.next_uri {
                Some(next) => page = self.send(Method::GET, &next, "").await?,
                None => return Ok(answer),
            }
        }
    }

    async fn send(&self, method: Method, url: &str, body: &str) -> Result<Page> {
        let failed = |what: String| Error::Invalid(format!("Trino at {}: {what}", self.server));
        let uri: Uri = url.parse().map_err(|e| failed(format!("{url}: {e}")))?;
        for attempt in 0..=BUSY_RETRIES {
            let mut request = Request::builder()
                .method(method.clone())
                .uri(uri.clone())
                .header("X-Trino-User", &self.user)
                .header("X-Trino-Source", "sift-tpcds")
                .header("X-Trino-Catalog", &self.catalog)
                .header("X-Trino-Schema", &self.schema);
            for property in &self.session {
                request = request.header("X-Trino-Session", property);
            }
            let request = request
                .body(body.to_string())
                .map_err(|e| failed(e.to_string()))?;
            let response = self
                .http
                .request(request)
                .await
                .map_err(|e| failed(format!("{e} (is it running?)")))?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| failed(e.to_string()))?
                .to_bytes();
            match status {
                StatusCode::OK => {
                    return serde_json::from_slice(&bytes)
                        .map_err(|e| failed(format!("unreadable answer: {e}")))
                }
                StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
                    if attempt < BUSY_RETRIES =>
                {
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(attempt.min(20) + 1)))
                        .await
                }
                _ => {
                    return Err(failed(format!(
                        "{status}: {}",
                        String::from_utf8_lossy(&bytes).trim()
                    )))
                }
            }
        }
        Err(failed("busy on every attempt".into()))
    }
}
