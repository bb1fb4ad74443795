//! Planning scans (modes, filters, join order, what a scan sent to another process keeps)
//! and a select stream cut short.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::TableProvider;
use datafusion::logical_expr::{col, lit, Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::layout::Format;
use crate::scan::request::{Request, Results};
use crate::scan::source::{scan_units, sift_scan, ScanSource};
use crate::scan::table::{with_key_statistics, S3Table};
use crate::scan::{Location, Mode, Store};

/// The URL of a TCP server that answers every request with `response` and closes the
/// connection (e.g. a select answered in part).
async fn server_answering(response: Vec<u8>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let response = response.clone();
            tokio::spawn(async move {
                // The request: headers, then as many body bytes as they announce.
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = socket.write_all(&response).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

/// The URL of a port nothing listens on: connections are refused.
async fn dead_endpoint() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{addr}")
}

/// A store at `endpoints` that pauses 1 ms before sending a request again.
async fn store_at(endpoints: Vec<String>) -> Store {
    let shared = crate::s3::Signing::keys("a", "s", "us-east-1")
        .shared_config(crate::net::Link::unlimited())
        .await;
    let location = Location {
        endpoints,
        virtual_hosted: false,
    };
    let mut store = Store::connect(&shared, &location, "b".into(), 1);
    store.retry_pause = std::time::Duration::from_millis(1);
    store
}

fn get(key: &str, start: u64, end: u64) -> Request {
    Request::Get {
        key: key.into(),
        start,
        end,
    }
}

/// Requests are spread over the endpoints by their object and range, the same way in every
/// run and process: a change of the hash would send a second run's requests elsewhere.
#[test]
fn requests_spread_over_endpoints_the_same_way_every_time() {
    let mut per_endpoint = [0; 3];
    for part in 0..30 {
        for split in 0..10 {
            let request = Request::Select {
                key: format!("tpcds/sf1/store_sales/part-{part:05}.dat"),
                range: Some((split << 25, (split + 1) << 25)),
            };
            per_endpoint[request.home(3)] += 1;
        }
    }
    assert!(
        per_endpoint.iter().all(|&n| (70..=130).contains(&n)),
        "{per_endpoint:?}"
    );
    assert_eq!(get("a/part-00000.dat", 0, 10).home(1), 0);
    assert_eq!(
        [0, 1 << 23, 2 << 23, 3 << 23]
            .map(|start| get("t/part-00001.dat", start, start + 1).home(4)),
        FIXED_HOMES
    );
}

/// What `requests_spread_over_endpoints_the_same_way_every_time` expects of FNV-1a.
const FIXED_HOMES: [usize; 4] = [0, 0, 3, 3];

/// A request whose home endpoint refuses connections goes to the next one, and the next
/// requests pass the failed endpoint over without trying it.
#[tokio::test]
async fn a_request_goes_to_the_next_endpoint_when_its_home_is_down() {
    let live =
        server_answering(b"HTTP/1.1 206 Partial Content\r\nContent-Length: 4\r\n\r\nabcd".to_vec())
            .await;
    let request = get("t/part-00001.dat", 0, 4);
    let home = request.home(2);
    let mut endpoints = vec![live.clone(), live];
    endpoints[home] = dead_endpoint().await;
    let store = store_at(endpoints).await;

    let answer = store
        .send(&request, "", Format::Csv, Results::Csv)
        .await
        .expect("answered");
    assert_eq!(&answer.body.joined()[..], b"abcd");
    assert_eq!((answer.endpoint, answer.retries), (1 - home, 1));
    let again = store
        .send(&request, "", Format::Csv, Results::Csv)
        .await
        .expect("answered");
    assert_eq!(
        (again.endpoint, again.retries),
        (1 - home, 0),
        "the failed endpoint is passed over for a while"
    );
}

/// A request whose home endpoint is busy (503 SlowDown) goes to the next one, but the busy
/// endpoint is not passed over: the next request tries its home first again.
#[tokio::test]
async fn a_busy_endpoint_is_tried_again_by_the_next_request() {
    let live =
        server_answering(b"HTTP/1.1 206 Partial Content\r\nContent-Length: 4\r\n\r\nabcd".to_vec())
            .await;
    let slow_down = "<Error><Code>SlowDown</Code><Message>busy</Message></Error>";
    let busy = server_answering(
        format!(
            "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{slow_down}",
            slow_down.len()
        )
        .into_bytes(),
    )
    .await;
    let request = get("t/part-00001.dat", 0, 4);
    let home = request.home(2);
    let mut endpoints = vec![live.clone(), live];
    endpoints[home] = busy;
    let store = store_at(endpoints).await;

    for attempt in ["first", "second"] {
        let answer = store
            .send(&request, "", Format::Csv, Results::Csv)
            .await
            .expect("answered");
        assert_eq!(&answer.body.joined()[..], b"abcd");
        assert_eq!(
            (answer.endpoint, answer.retries),
            (1 - home, 1),
            "the {attempt} request tries its busy home first"
        );
    }
}

/// When every endpoint fails, the request gives up after a bounded number of attempts with
/// an error naming each endpoint tried.
#[tokio::test]
async fn a_request_that_fails_everywhere_names_the_endpoints_tried() {
    let (a, b) = (dead_endpoint().await, dead_endpoint().await);
    let store = store_at(vec![a.clone(), b.clone()]).await;
    let error = store
        .send(
            &get("t/part-00001.dat", 0, 4),
            "",
            Format::Csv,
            Results::Csv,
        )
        .await
        .expect_err("nowhere to send it");
    assert!(
        matches!(error, crate::error::Error::GaveUp { attempts: 10, .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&a) && text.contains(&b) && text.contains("GetObject t/part-00001.dat"),
        "{text}"
    );
}

/// A store answers while one endpoint answers anything, a refusal included; with every
/// endpoint refusing connections it does not.
#[tokio::test]
async fn a_store_answers_while_one_endpoint_answers_anything() {
    let refusal = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec();
    let alive = store_at(vec![dead_endpoint().await, server_answering(refusal).await]).await;
    assert!(alive.answers("t/part-00001.dat").await);
    let gone = store_at(vec![dead_endpoint().await, dead_endpoint().await]).await;
    assert!(!gone.answers("t/part-00001.dat").await);
}

/// A request the store refuses for good (not busy, not cut short) is not sent again.
#[tokio::test]
async fn a_refused_request_is_not_sent_again() {
    let refusal = "<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>";
    let response = format!(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{refusal}",
        refusal.len()
    );
    let server = server_answering(response.into_bytes()).await;
    let store = store_at(vec![server, dead_endpoint().await]).await;
    let request = get("t/missing.dat", 0, 4);
    let error = store
        .send(&request, "", Format::Csv, Results::Csv)
        .await
        .expect_err("refused");
    assert!(
        !error.is_transient() && error.to_string().contains("NoSuchKey"),
        "{error}"
    );
}

/// One event-stream message of `event_type` with `payload`.
fn event(event_type: &str, payload: &[u8]) -> Vec<u8> {
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let message = Message::new(Bytes::copy_from_slice(payload))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(event_type.to_string().into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".to_string().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/octet-stream".to_string().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&message, &mut out).expect("encode");
    out
}

/// A select answered with rows but no End event, or cut off mid-body, is an error that
/// names the object and the range — never rows — after the store sent it again a bounded
/// number of times.
#[tokio::test]
async fn a_select_stream_cut_short_is_an_error_naming_object_and_range() {
    let records = event("Records", b"1|a\n2|b\n");
    let head =
        |length: usize| format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n").into_bytes();
    // A complete body without End.
    let no_end = [head(records.len()), records.clone()].concat();
    // A body that stops half-way through what its Content-Length announced.
    let cut = [head(records.len() * 2), records].concat();
    for (response, what) in [(no_end, "End event"), (cut, "")] {
        let store = store_at(vec![server_answering(response).await]).await;
        let request = Request::Select {
            key: "t/part-1.dat".into(),
            range: Some((0, 100)),
        };
        let error = store
            .send(&request, "SELECT s._1", Format::Csv, Results::Csv)
            .await
            .expect_err("a result cut short is an error");
        assert!(
            error.to_string().contains("gave up after 10 attempts"),
            "{error}"
        );
        let crate::error::Error::GaveUp { last, .. } = error else {
            unreachable!("checked above")
        };
        let last = last.to_string();
        assert!(
            last.contains("t/part-1.dat (ScanRange 0-99)") && last.contains(what),
            "{last}"
        );
    }
}

#[test]
fn auto_keeps_a_parquet_parts_splits_in_one_partition() {
    let schema = crate::schema::table_schema("inventory").expect("a TPC-DS table");
    let objects = vec![
        ("inventory/part-00000.parquet".to_string(), 100 << 20),
        ("inventory/part-00001.parquet".to_string(), 40 << 20),
    ];
    let table = |mode| {
        let table = S3Table::new(
            schema,
            objects.clone(),
            20.0,
            Store::offline(),
            mode,
            Format::Parquet,
        );
        table.def().plan_requests(mode, 2)
    };
    let split = |part: u32, start: u64, end: u64| Request::Select {
        key: format!("inventory/part-0000{part}.parquet"),
        range: Some((start << 20, end << 20)),
    };
    let first = vec![split(0, 0, 32), split(0, 32, 64), split(0, 64, 96)];
    let first = [first, vec![split(0, 96, 100)]].concat();
    let second = vec![split(1, 0, 32), split(1, 32, 40)];
    assert_eq!(table(Mode::Auto), [first.clone(), second.clone()]);
    // Dynamic mode selects every split: they are dealt out one by one.
    let dealt = table(Mode::Dynamic);
    let odd = vec![first[0].clone(), first[2].clone(), second[0].clone()];
    let even = vec![first[1].clone(), first[3].clone(), second[1].clone()];
    assert_eq!(dealt, [odd, even]);
}

/// `inventory` (four columns) as one 100 MiB part in `mode`, for planning.
fn inventory(mode: Mode) -> S3Table {
    let schema = crate::schema::table_schema("inventory").expect("a TPC-DS table");
    let objects = vec![("inventory/part-00000.dat".to_string(), 100 << 20)];
    S3Table::new(schema, objects, 20.0, Store::offline(), mode, Format::Csv)
}

/// The mode each scan of `inventory` is planned in, for a table in `mode`.
async fn planned(mode: Mode, projection: Option<Vec<usize>>, filters: &[Expr]) -> Mode {
    let table = inventory(mode);
    let state = SessionContext::new().state();
    let plan = table
        .scan(&state, projection.as_ref(), filters, None)
        .await
        .expect("planned");
    let (scan, config) = sift_scan(plan.as_ref()).expect("a Sift scan");
    if scan.mode == Mode::Fetch {
        assert!(
            scan_units(config)
                .expect("units")
                .iter()
                .flat_map(|u| u.requests())
                .all(|r| matches!(r, Request::Get { .. })),
            "a fetched scan sends GETs"
        );
    }
    scan.mode
}

/// The tables scanned under `plan`.
fn tables_under(plan: &Arc<dyn ExecutionPlan>) -> Vec<&'static str> {
    let mut tables = Vec::new();
    if let Some((scan, _)) = sift_scan(plan.as_ref()) {
        tables.push(scan.table.name);
    }
    for child in plan.children() {
        tables.extend(tables_under(child));
    }
    tables
}

/// The build side of every hash join under `plan`, as the tables it scans.
fn build_sides(plan: &Arc<dyn ExecutionPlan>) -> Vec<Vec<&'static str>> {
    let mut sides = Vec::new();
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        sides.push(tables_under(join.left()));
    }
    for child in plan.children() {
        sides.extend(build_sides(child));
    }
    sides
}

/// With the key columns' distinct values known, a fact table joined to several
/// dimensions is probed, never built into a hash table (q39's core at SF 1: it was
/// built on 11.7 M inventory rows and probed with 31 dates).
#[tokio::test]
async fn joins_build_on_the_dimensions_not_the_fact_table() {
    let store = Store::offline();
    // SF 1 sizes and line lengths, roughly.
    let sizes = [
        ("inventory", 235_000_000u64, 20.0),
        ("item", 5_000_000, 280.0),
        ("warehouse", 600, 120.0),
        ("date_dim", 10_000_000, 140.0),
    ];
    let tables: Vec<S3Table> = sizes
        .iter()
        .map(|&(name, bytes, line)| {
            let schema = crate::schema::table_schema(name).expect("a TPC-DS table");
            let objects = vec![(format!("{name}/part-00000.dat"), bytes)];
            S3Table::new(
                schema,
                objects,
                line,
                Arc::clone(&store),
                Mode::Dynamic,
                Format::Csv,
            )
        })
        .collect();
    let ctx = SessionContext::new();
    for table in with_key_statistics(tables) {
        ctx.register_table(table.name(), Arc::new(table))
            .expect("registered");
    }
    let plan = ctx
        .sql(
            "SELECT w_warehouse_name, i_item_sk, d_moy, avg(inv_quantity_on_hand) \
             FROM inventory, item, warehouse, date_dim \
             WHERE inv_item_sk = i_item_sk AND inv_warehouse_sk = w_warehouse_sk \
             AND inv_date_sk = d_date_sk AND d_year = 2001 AND d_moy = 1 \
             GROUP BY w_warehouse_name, i_item_sk, d_moy",
        )
        .await
        .expect("planned")
        .create_physical_plan()
        .await
        .expect("a physical plan");
    let sides = build_sides(&plan);
    assert_eq!(sides.len(), 3, "three hash joins");
    for side in sides {
        assert!(!side.contains(&"inventory"), "a join builds on {side:?}");
    }
}

/// Fetch mode takes the filters the pushdown modes send and applies them itself: it
/// reads the columns they need, keeps the rows that pass (a NULL does not) and drops
/// those columns again.
#[tokio::test]
async fn a_fetched_scan_applies_the_filters_the_pushdown_modes_send() {
    use datafusion::arrow::array::{Array, Int32Array};
    // Qualified, as DataFusion hands a scan its filters.
    let quantity = col("inventory.inv_quantity_on_hand").gt(lit(5));
    let two_columns = (col("inv_item_sk") + col("inv_warehouse_sk")).gt(lit(5));
    let offered = [&quantity, &two_columns];
    let accepted = |mode| {
        inventory(mode)
            .supports_filters_pushdown(&offered)
            .expect("answers")
    };
    let fetch = accepted(Mode::Fetch);
    assert_eq!(fetch, accepted(Mode::Pushdown));
    assert!(matches!(
        fetch[..],
        [
            TableProviderFilterPushDown::Exact,
            TableProviderFilterPushDown::Unsupported
        ]
    ));

    let state = SessionContext::new().state();
    let plan = inventory(Mode::Fetch)
        .scan(
            &state,
            Some(&vec![1]),
            std::slice::from_ref(&quantity),
            None,
        )
        .await
        .expect("planned");
    let scan: &ScanSource = sift_scan(plan.as_ref()).expect("a Sift scan").0;
    let filter = scan
        .filters
        .client
        .as_ref()
        .expect("fetch applies its filter");
    assert_eq!(filter.read, [1, 3], "the item key, then the quantity");

    let items = Int32Array::from(vec![10, 20, 30, 40]);
    let quantities = Int32Array::from(vec![Some(3), Some(6), None, Some(9)]);
    let batch = RecordBatch::try_new(
        Arc::new(scan.table.schema.project(&filter.read).expect("columns")),
        vec![Arc::new(items), Arc::new(quantities)],
    )
    .expect("a batch");
    let kept = filter
        .apply(&batch, scan.output_schema())
        .expect("filtered");
    assert_eq!(&kept.schema(), scan.output_schema());
    let kept = kept.column(0).as_any().downcast_ref::<Int32Array>();
    assert_eq!(kept.expect("ints").values(), &[20, 40]);
}

#[tokio::test]
async fn a_scan_of_every_column_under_no_filter_is_fetched() {
    let some_quantity = col("inv_quantity_on_hand").gt(lit(5));
    for mode in [Mode::Pushdown, Mode::Dynamic] {
        assert_eq!(planned(mode, None, &[]).await, Mode::Fetch);
        assert_eq!(
            planned(mode, Some(vec![0, 1, 2, 3]), &[]).await,
            Mode::Fetch
        );
        assert_eq!(planned(mode, Some(vec![0, 3]), &[]).await, mode);
        assert_eq!(planned(mode, Some(vec![]), &[]).await, mode);
        assert_eq!(
            planned(mode, None, std::slice::from_ref(&some_quantity)).await,
            mode
        );
    }
    assert_eq!(planned(Mode::Fetch, Some(vec![0]), &[]).await, Mode::Fetch);
}

/// A LIMIT over a scan becomes the scan's fetch, and DataFusion may drop the limit above it:
/// a scan sent to an executor must keep it, or its task reads every row to be cut later.
#[tokio::test]
async fn a_scan_sent_to_another_process_keeps_its_limit() {
    use datafusion::execution::TaskContext;
    use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};

    let store = Arc::new(store_at(vec!["http://127.0.0.1:1".into()]).await);
    let schema = crate::schema::table_schema("inventory").expect("a TPC-DS table");
    let objects = vec![("inventory/part-00000.dat".to_string(), 100 << 20)];
    let table = S3Table::new(schema, objects, 20.0, store, Mode::Pushdown, Format::Csv);
    let ctx = SessionContext::new();
    ctx.register_table("inventory", Arc::new(table))
        .expect("registered");
    let plan = ctx
        .sql("SELECT inv_item_sk FROM inventory WHERE inv_quantity_on_hand > 5 LIMIT 7")
        .await
        .expect("sql")
        .create_physical_plan()
        .await
        .expect("planned");
    let mut scans = Vec::new();
    let mut pending = vec![Arc::clone(&plan)];
    while let Some(node) = pending.pop() {
        if sift_scan(node.as_ref()).is_some() {
            scans.push(Arc::clone(&node));
        }
        pending.extend(node.children().into_iter().cloned());
    }
    let [scan] = &scans[..] else {
        panic!("one Sift scan in {plan:?}");
    };
    assert_eq!(scan.fetch(), Some(7), "DataFusion gave the scan the limit");

    let shared = crate::s3::Signing::keys("a", "s", "us-east-1")
        .shared_config(crate::net::Link::unlimited())
        .await;
    let codec = crate::cluster::SiftCodec::new(shared);
    let converter = DefaultPhysicalProtoConverter {};
    let mut buf = Vec::new();
    codec
        .try_encode(Arc::clone(scan), &mut buf, &converter)
        .expect("encoded");
    let decoded = codec
        .try_decode(&buf, &[], &TaskContext::default(), &converter)
        .expect("decoded");
    assert!(sift_scan(decoded.as_ref()).is_some());
    assert_eq!(decoded.fetch(), Some(7));
}
