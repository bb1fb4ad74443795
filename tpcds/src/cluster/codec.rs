//! [`SiftCodec`]: Sift's table and scan in Ballista's plans.
//!
//! Ballista serialises a query's logical plan (client → scheduler) and each stage's physical
//! plan (scheduler → executors) with DataFusion's protobuf codecs, asking an extension codec
//! for the nodes DataFusion does not know. This one writes an [`S3Table`] or a Sift scan (a
//! `DataSourceExec` over a [`ScanSource`]) as a tagged record and hands every other node
//! to Ballista's own codecs, which it replaces.
//!
//! A record is `TAG`, the version of Sift that wrote it and a NUL, the length and JSON of
//! the table's or scan's wire form, then (scans only) the scan's filters as DataFusion's
//! protobuf expressions. A process refuses a record of another version, naming both: the
//! wire forms change between versions, and a scan decoded by other code than planned it
//! could send other requests. A scan is rebuilt from its logical
//! filters rather than from its lowered SQL and compiled predicates, so the process that
//! runs it lowers them with its own code, exactly as the planner's did.
//!
//! The store is sent without credentials: each process signs with its own ([`SdkConfig`]),
//! as every Trino worker or Ballista executor has its own S3 configuration. A process makes
//! one client per store it is sent, and reuses it (and its request limit) for every task.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use aws_config::SdkConfig;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result as DfResult, TableReference};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_exprs;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use datafusion_proto::protobuf::LogicalExprList;
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::scan::{
    scan_units, sift_scan, S3Table, ScanSource, ScanWire, Store, StoreSpec, TableDef, TableWire,
};

const TABLE_TAG: &[u8] = b"sift-tpcds-table\0";
const SCAN_TAG: &[u8] = b"sift-tpcds-scan\0";
/// The version of Sift, which every record carries.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The extension codec of every Sift process in a Ballista cluster: the `run` client, the
/// scheduler and the executors.
pub struct SiftCodec {
    /// Credentials, region and HTTP client of this process's store clients.
    shared: SdkConfig,
    /// One store per store spec received.
    stores: Mutex<HashMap<StoreSpec, Arc<Store>>>,
    logical: BallistaLogicalExtensionCodec,
    physical: BallistaPhysicalExtensionCodec,
}

impl fmt::Debug for SiftCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiftCodec").finish_non_exhaustive()
    }
}

impl SiftCodec {
    pub fn new(shared: SdkConfig) -> SiftCodec {
        SiftCodec {
            shared,
            stores: Mutex::new(HashMap::new()),
            logical: BallistaLogicalExtensionCodec::default(),
            physical: BallistaPhysicalExtensionCodec::default(),
        }
    }

    /// This process's store for `spec`, made on first use.
    fn store(&self, spec: &StoreSpec) -> Arc<Store> {
        let make = || Arc::new(Store::from_spec(&self.shared, spec.clone()));
        match self.stores.lock() {
            Ok(mut stores) => Arc::clone(stores.entry(spec.clone()).or_insert_with(make)),
            Err(_) => make(),
        }
    }
}

/// `tag`, then `wire` as JSON with its length, then `rest`.
fn write_record<T: Serialize>(
    tag: &[u8],
    wire: &T,
    rest: &[u8],
    buf: &mut Vec<u8>,
) -> DfResult<()> {
    let json = serde_json::to_vec(wire).map_err(|e| DataFusionError::External(Box::new(e)))?;
    buf.extend_from_slice(tag);
    buf.extend_from_slice(VERSION.as_bytes());
    buf.push(0);
    buf.extend_from_slice(&(json.len() as u64).to_le_bytes());
    buf.extend_from_slice(&json);
    buf.extend_from_slice(rest);
    Ok(())
}

/// The wire form and the bytes after it, when `buf` is a record tagged `tag`; `None` for a
/// node of another codec.
fn read_record<'a, T: DeserializeOwned>(
    tag: &[u8],
    buf: &'a [u8],
) -> Option<DfResult<(T, &'a [u8])>> {
    let body = buf.strip_prefix(tag)?;
    let malformed =
        |what: String| DataFusionError::Plan(format!("malformed Sift plan node: {what}"));
    Some((|| {
        let end = body
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| malformed("no version".into()))?;
        let (version, body) = (&body[..end], &body[end + 1..]);
        if version != VERSION.as_bytes() {
            return Err(DataFusionError::Plan(format!(
                "a plan written by sift {} reached a process running sift {VERSION}: run the \
                 same version of sift for `run`, the scheduler and every executor",
                String::from_utf8_lossy(version)
            )));
        }
        let (len, body) = body
            .split_first_chunk::<8>()
            .ok_or_else(|| malformed("no length".into()))?;
        let len = usize::try_from(u64::from_le_bytes(*len))
            .ok()
            .filter(|&n| n <= body.len())
            .ok_or_else(|| malformed("length past the end".into()))?;
        let (json, rest) = body.split_at(len);
        let wire = serde_json::from_slice(json).map_err(|e| malformed(e.to_string()))?;
        Ok((wire, rest))
    })())
}

impl LogicalExtensionCodec for SiftCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.logical.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.logical.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        match read_record::<TableWire>(TABLE_TAG, buf) {
            Some(record) => {
                let (wire, _) = record?;
                let store = self.store(&wire.store);
                let table = S3Table::from_def(Arc::new(TableDef::from_wire(wire, store)?));
                Ok(Arc::new(table))
            }
            None => self
                .logical
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        match node.downcast_ref::<S3Table>() {
            Some(table) => {
                let wire = table.def().wire().ok_or_else(|| unplaced(table_ref))?;
                write_record(TABLE_TAG, &wire, &[], buf)
            }
            None => self.logical.try_encode_table_provider(table_ref, node, buf),
        }
    }
}

fn unplaced(table: impl fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!(
        "table {table}: its store's endpoint is not known, so no other process can scan it"
    ))
}

impl PhysicalExtensionCodec for SiftCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let Some(record) = read_record::<ScanWire>(SCAN_TAG, buf) else {
            return self.physical.try_decode(buf, inputs, ctx, proto_converter);
        };
        let (wire, rest) = record?;
        let list = LogicalExprList::decode(rest)
            .map_err(|e| DataFusionError::Plan(format!("malformed Sift scan filters: {e}")))?;
        let filters: Vec<Expr> = parse_exprs(&list.expr, ctx, self)
            .map_err(|e| DataFusionError::Plan(format!("Sift scan filters: {e}")))?;
        let store = self.store(&wire.table.store);
        let state = SessionStateBuilder::new()
            .with_config(ctx.session_config().clone())
            .with_runtime_env(ctx.runtime_env())
            .with_default_features()
            .build();
        Ok(ScanSource::from_wire(wire, filters, store, &state)?)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        let Some((scan, config)) = sift_scan(node.as_ref()) else {
            return self.physical.try_encode(node, buf, proto_converter);
        };
        // The partitions the plan still has: Ballista restricts a stage's file scans to a
        // task's partitions before it sends the stage.
        let units = scan_units(config)?;
        let wire = scan
            .wire(&units, config.limit)
            .ok_or_else(|| unplaced(scan.table_name()))?;
        let filters = serialize_exprs(scan.logical_filters(), self)
            .map_err(|e| DataFusionError::Plan(format!("Sift scan filters: {e}")))?;
        let rest = LogicalExprList { expr: filters }.encode_to_vec();
        write_record(SCAN_TAG, &wire, &rest, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_of_another_version_is_refused_naming_both() {
        let mut buf = Vec::new();
        write_record(SCAN_TAG, &vec![1, 2, 3], b"rest", &mut buf).expect("written");
        let (wire, rest) = read_record::<Vec<u32>>(SCAN_TAG, &buf)
            .expect("a Sift record")
            .expect("read back");
        assert_eq!((wire, rest), (vec![1, 2, 3], &b"rest"[..]));
        assert!(
            read_record::<Vec<u32>>(TABLE_TAG, &buf).is_none(),
            "another tag"
        );

        let older = [SCAN_TAG, b"0.0.1", &buf[SCAN_TAG.len() + VERSION.len()..]].concat();
        let error = read_record::<Vec<u32>>(SCAN_TAG, &older)
            .expect("a Sift record")
            .expect_err("another version")
            .to_string();
        assert!(
            error.contains("sift 0.0.1") && error.contains(&format!("sift {VERSION}")),
            "{error}"
        );
    }
}
