//! Planning scans (modes, filters, join order) and a select stream cut short.

use std::sync::Arc;

use aws_sdk_s3::Client;
use bytes::Bytes;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::TableProvider;
use datafusion::logical_expr::{col, lit, Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::layout::Format;
use crate::scan::request::{select, Request};
use crate::scan::source::{scan_units, sift_scan, ScanSource};
use crate::scan::table::{with_key_statistics, S3Table};
use crate::scan::{Mode, Store};

/// A store for planning only: no request is ever sent.
fn offline_store() -> Arc<Store> {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .build();
    Arc::new(Store::new(Client::from_conf(config), "b".into(), 4))
}

/// A store whose endpoint is a TCP server that answers every request with `response`
/// and closes the connection: a select answered in part.
async fn store_answering(response: Vec<u8>) -> Store {
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
    let args = crate::s3::EndpointArgs {
        endpoint: format!("http://{addr}"),
        bucket: "b".into(),
        prefix: String::new(),
        signing: crate::s3::Signing::keys("a", "s", "us-east-1"),
        virtual_hosted: false,
    };
    let client = crate::s3::client(&args, crate::net::Link::unlimited()).await;
    Store::new(client, "b".into(), 1)
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
/// names the object and the range — never rows.
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
        let store = store_answering(response).await;
        let error = select(
            &store,
            "t/part-1.dat",
            Some((0, 100)),
            "SELECT s._1",
            Format::Csv,
        )
        .await
        .expect_err("a result cut short is an error")
        .to_string();
        assert!(
            error.contains("t/part-1.dat (ScanRange 0-99)") && error.contains(what),
            "{error}"
        );
    }
}

/// `inventory` (four columns) as one 100 MiB part in `mode`, for planning.
fn inventory(mode: Mode) -> S3Table {
    let schema = crate::schema::table_schema("inventory").expect("a TPC-DS table");
    let objects = vec![("inventory/part-00000.dat".to_string(), 100 << 20)];
    S3Table::new(schema, objects, 20.0, offline_store(), mode, Format::Csv)
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
    let store = offline_store();
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
