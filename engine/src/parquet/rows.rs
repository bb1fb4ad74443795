//! Arrow arrays → rows the evaluator reads: each Parquet row becomes a JSON-like object
//! ([`Node::Object`]) of the columns the query reads.
//!
//! Types map as S3 Select gives them:
//!
//! | Parquet / Arrow | value |
//! |---|---|
//! | BOOLEAN | BOOL |
//! | INT8–INT64, UINT8–UINT64 | INT (a UINT64 over 2^63 − 1 becomes DECIMAL) |
//! | FLOAT, DOUBLE, FLOAT16 | FLOAT |
//! | DECIMAL | DECIMAL (wider than 38 digits: FLOAT) |
//! | STRING / UTF8 (and ENUM, JSON) | STRING, borrowed from the batch |
//! | DATE | TIMESTAMP at day precision (`2001-08-22`) |
//! | TIMESTAMP | TIMESTAMP at the column's precision, `Z` when adjusted to UTC, the unknown offset `-00:00` when local |
//! | LIST, MAP, STRUCT | nested values (arrays and objects), as JSON input makes them |
//! | anything else (TIME, INTERVAL, BINARY that is not UTF-8, …) | STRING, as Arrow prints it |
//!
//! NULL is NULL; a column the file does not have is MISSING, as a JSON key would be.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, OffsetSizeTrait, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::{DataType, SchemaRef, TimeUnit};

use crate::err;
use crate::error::Result;
use crate::json::{Node, Scalar};
use crate::value::timestamp::{Precision, SECS_PER_DAY};
use crate::value::{Decimal, Timestamp};

/// One record batch, ready to be read row by row.
pub struct BatchRows {
    schema: SchemaRef,
    /// The batch's columns, dictionary-encoded ones decoded.
    columns: Vec<ArrayRef>,
    rows: usize,
}

impl BatchRows {
    pub fn new(batch: &RecordBatch) -> Result<BatchRows> {
        let columns = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                // Decoded once per batch rather than looked up per value.
                DataType::Dictionary(_, value) => arrow_cast::cast(c, value).map_err(|e| {
                    err!(
                        ParquetParsingError,
                        "a dictionary-encoded column could not be decoded: {e}"
                    )
                }),
                _ => Ok(c.clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BatchRows {
            schema: batch.schema(),
            columns,
            rows: batch.num_rows(),
        })
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    /// The batch's columns, dictionary-encoded ones decoded.
    pub fn arrays(&self) -> &[ArrayRef] {
        &self.columns
    }

    /// The columns with their names, downcast once for the whole batch.
    pub fn columns(&self) -> Vec<(&str, Column<'_>)> {
        self.schema
            .fields()
            .iter()
            .zip(&self.columns)
            .map(|(field, array)| (field.name().as_str(), Column::new(array.as_ref())))
            .collect()
    }

    /// Fills `members` with row `i` of `columns` (from [`BatchRows::columns`]), by name.
    pub fn row<'b>(
        columns: &[(&'b str, Column<'b>)],
        i: usize,
        members: &mut Vec<(Cow<'b, str>, Node<'b>)>,
    ) -> Result<()> {
        members.clear();
        for (name, column) in columns {
            members.push((Cow::Borrowed(*name), column.node(i)?));
        }
        Ok(())
    }
}

/// A column of a batch with its concrete type resolved: the types TPC-DS-like tables are
/// made of read without a type dispatch per value; anything else goes through [`node_at`].
pub enum Column<'b> {
    Int32(&'b arrow_array::Int32Array),
    Int64(&'b arrow_array::Int64Array),
    Decimal128(&'b arrow_array::Decimal128Array, i8),
    Utf8(&'b arrow_array::StringArray),
    Date32(&'b arrow_array::Date32Array),
    Other(&'b dyn Array),
}

impl<'b> Column<'b> {
    pub fn new(array: &'b dyn Array) -> Column<'b> {
        let any = array.as_any();
        let typed = match array.data_type() {
            DataType::Int32 => any.downcast_ref().map(Column::Int32),
            DataType::Int64 => any.downcast_ref().map(Column::Int64),
            DataType::Decimal128(_, s) => any.downcast_ref().map(|a| Column::Decimal128(a, *s)),
            DataType::Utf8 => any.downcast_ref().map(Column::Utf8),
            DataType::Date32 => any.downcast_ref().map(Column::Date32),
            _ => None,
        };
        typed.unwrap_or(Column::Other(array))
    }

    /// Element `i` (as [`node_at`] reads it).
    #[inline]
    pub fn node(&self, i: usize) -> Result<Node<'b>> {
        Ok(match self {
            Column::Int32(a) if a.is_valid(i) => Node::Scalar(Scalar::Int(a.value(i).into())),
            Column::Int64(a) if a.is_valid(i) => Node::Scalar(Scalar::Int(a.value(i))),
            Column::Decimal128(a, s) if a.is_valid(i) => decimal(a.value(i), *s),
            Column::Utf8(a) if a.is_valid(i) => Node::String(Cow::Borrowed(a.value(i))),
            Column::Date32(a) if a.is_valid(i) => date(a.value(i).into()),
            Column::Other(a) => node_at(*a, i)?,
            _ => Node::Null,
        })
    }
}

/// Element `i` of `array` as a [`Node`], borrowing strings from the array.
pub fn node_at(array: &dyn Array, i: usize) -> Result<Node<'_>> {
    if array.is_null(i) {
        return Ok(Node::Null);
    }
    let int = |v: i64| Node::Scalar(Scalar::Int(v));
    let float = |v: f64| Node::Scalar(Scalar::Float(v));
    Ok(match array.data_type() {
        DataType::Null => Node::Null,
        DataType::Boolean => Node::Bool(
            array
                .as_boolean_opt()
                .ok_or_else(|| mismatch(array))?
                .value(i),
        ),
        DataType::Int8 => int(prim::<Int8Type>(array, i)?.into()),
        DataType::Int16 => int(prim::<Int16Type>(array, i)?.into()),
        DataType::Int32 => int(prim::<Int32Type>(array, i)?.into()),
        DataType::Int64 => int(prim::<Int64Type>(array, i)?),
        DataType::UInt8 => int(prim::<UInt8Type>(array, i)?.into()),
        DataType::UInt16 => int(prim::<UInt16Type>(array, i)?.into()),
        DataType::UInt32 => int(prim::<UInt32Type>(array, i)?.into()),
        DataType::UInt64 => {
            let v = prim::<UInt64Type>(array, i)?;
            match i64::try_from(v) {
                Ok(v) => int(v),
                Err(_) => decimal(i128::from(v), 0),
            }
        }
        DataType::Float16 => float(prim::<Float16Type>(array, i)?.to_f64()),
        DataType::Float32 => float(prim::<Float32Type>(array, i)?.into()),
        DataType::Float64 => float(prim::<Float64Type>(array, i)?),
        DataType::Decimal32(_, s) => decimal(prim::<Decimal32Type>(array, i)?.into(), *s),
        DataType::Decimal64(_, s) => decimal(prim::<Decimal64Type>(array, i)?.into(), *s),
        DataType::Decimal128(_, s) => decimal(prim::<Decimal128Type>(array, i)?, *s),
        DataType::Utf8 => Node::String(Cow::Borrowed(string::<i32>(array, i)?)),
        DataType::LargeUtf8 => Node::String(Cow::Borrowed(string::<i64>(array, i)?)),
        DataType::Utf8View => Node::String(Cow::Borrowed(
            array
                .as_string_view_opt()
                .ok_or_else(|| mismatch(array))?
                .value(i),
        )),
        DataType::Date32 => date(prim::<Date32Type>(array, i)?.into()),
        DataType::Date64 => date(prim::<Date64Type>(array, i)?.div_euclid(86_400_000)),
        DataType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => prim::<TimestampSecondType>(array, i)?,
                TimeUnit::Millisecond => prim::<TimestampMillisecondType>(array, i)?,
                TimeUnit::Microsecond => prim::<TimestampMicrosecondType>(array, i)?,
                TimeUnit::Nanosecond => prim::<TimestampNanosecondType>(array, i)?,
            };
            timestamp(v, *unit, tz.is_some())
        }
        DataType::List(_) => list::<i32>(array, i)?,
        DataType::LargeList(_) => list::<i64>(array, i)?,
        DataType::FixedSizeList(_, n) => {
            let l = array
                .as_fixed_size_list_opt()
                .ok_or_else(|| mismatch(array))?;
            let n = usize::try_from(*n).unwrap_or(0);
            let values = l.values();
            Node::Array(
                (i * n..(i + 1) * n)
                    .map(|j| node_at(values, j))
                    .collect::<Result<_>>()?,
            )
        }
        DataType::Struct(fields) => {
            let s = array.as_struct_opt().ok_or_else(|| mismatch(array))?;
            Node::Object(
                fields
                    .iter()
                    .zip(s.columns())
                    .map(|(f, c)| Ok((Cow::Borrowed(f.name().as_str()), node_at(c, i)?)))
                    .collect::<Result<_>>()?,
            )
        }
        DataType::Map(..) => {
            let m = array.as_map_opt().ok_or_else(|| mismatch(array))?;
            let offsets = m.value_offsets();
            let (from, to) = (offsets[i] as usize, offsets[i + 1] as usize);
            let (keys, values) = (m.keys(), m.values());
            Node::Object(
                (from..to)
                    .map(|j| {
                        let key = match node_at(keys, j)? {
                            Node::String(s) => s,
                            other => {
                                let mut text = Vec::new();
                                crate::json::write_node(&mut text, &other);
                                Cow::Owned(String::from_utf8_lossy(&text).into_owned())
                            }
                        };
                        Ok((key, node_at(values, j)?))
                    })
                    .collect::<Result<_>>()?,
            )
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let bytes: &[u8] = match array.data_type() {
                DataType::Binary => array.as_binary_opt::<i32>().map(|b| b.value(i)),
                DataType::LargeBinary => array.as_binary_opt::<i64>().map(|b| b.value(i)),
                _ => array.as_binary_view_opt().map(|b| b.value(i)),
            }
            .ok_or_else(|| mismatch(array))?;
            match std::str::from_utf8(bytes) {
                Ok(s) => Node::String(Cow::Borrowed(s)),
                Err(_) => printed(array, i)?,
            }
        }
        _ => printed(array, i)?,
    })
}

fn prim<T: ArrowPrimitiveType>(array: &dyn Array, i: usize) -> Result<T::Native> {
    Ok(array
        .as_primitive_opt::<T>()
        .ok_or_else(|| mismatch(array))?
        .value(i))
}

fn string<O: OffsetSizeTrait>(array: &dyn Array, i: usize) -> Result<&str> {
    Ok(array
        .as_string_opt::<O>()
        .ok_or_else(|| mismatch(array))?
        .value(i))
}

fn list<O: OffsetSizeTrait>(array: &dyn Array, i: usize) -> Result<Node<'_>> {
    let l = array.as_list_opt::<O>().ok_or_else(|| mismatch(array))?;
    let offsets = l.value_offsets();
    let (from, to) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
    let values = l.values();
    Ok(Node::Array(
        (from..to)
            .map(|j| node_at(values, j))
            .collect::<Result<_>>()?,
    ))
}

/// `mantissa × 10^-scale`; a negative scale multiplies. Past 38 digits, a FLOAT.
fn decimal(mantissa: i128, scale: i8) -> Node<'static> {
    let exact = match u8::try_from(scale) {
        Ok(s) => Decimal::new(mantissa, s),
        Err(_) => 10i128
            .checked_pow(u32::from(scale.unsigned_abs()))
            .and_then(|p| mantissa.checked_mul(p))
            .and_then(|m| Decimal::new(m, 0)),
    };
    match exact {
        Some(d) => Node::Scalar(Scalar::Decimal(d)),
        None => Node::Scalar(Scalar::Float(
            mantissa as f64 / 10f64.powi(i32::from(scale)),
        )),
    }
}

/// Days since 1970-01-01 as a date: a TIMESTAMP at day precision.
fn date(days: i64) -> Node<'static> {
    Node::Scalar(Scalar::Timestamp(Timestamp {
        seconds: days.saturating_mul(SECS_PER_DAY),
        nanos: 0,
        offset_minutes: None,
        precision: Precision::Day,
    }))
}

fn timestamp(v: i64, unit: TimeUnit, utc: bool) -> Node<'static> {
    let (per_second, precision) = match unit {
        TimeUnit::Second => (1, Precision::Second),
        TimeUnit::Millisecond => (1_000, Precision::Fraction(3)),
        TimeUnit::Microsecond => (1_000_000, Precision::Fraction(6)),
        TimeUnit::Nanosecond => (1_000_000_000, Precision::Fraction(9)),
    };
    let nanos_per_unit = 1_000_000_000 / per_second;
    Node::Scalar(Scalar::Timestamp(Timestamp {
        seconds: v.div_euclid(per_second),
        // Below 10^9: a remainder under `per_second` times `nanos_per_unit`.
        nanos: (v.rem_euclid(per_second) * nanos_per_unit) as u32,
        offset_minutes: utc.then_some(0),
        precision,
    }))
}

/// A value of a type without its own mapping, as Arrow prints it.
fn printed(array: &dyn Array, i: usize) -> Result<Node<'static>> {
    let formatter = ArrayFormatter::try_new(array, &FormatOptions::default()).map_err(|e| {
        err!(
            ParquetParsingError,
            "a column of type {} could not be read: {e}",
            array.data_type()
        )
    })?;
    Ok(Node::String(Cow::Owned(formatter.value(i).to_string())))
}

fn mismatch(array: &dyn Array) -> crate::error::SelectError {
    err!(
        InternalError,
        "a Parquet column of type {} did not decode as that type",
        array.data_type()
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, ListBuilder};
    use arrow_array::{
        Date32Array, Decimal128Array, Float64Array, Int64Array, StringArray, StructArray,
        TimestampMicrosecondArray,
    };
    use arrow_schema::Field;

    use super::*;
    use crate::json::write_node;

    fn json(node: &Node<'_>) -> String {
        let mut out = Vec::new();
        write_node(&mut out, node);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn scalars_keep_their_types() {
        let ints = Int64Array::from(vec![Some(-5), None]);
        assert_eq!(node_at(&ints, 0).unwrap(), Node::Scalar(Scalar::Int(-5)));
        assert_eq!(node_at(&ints, 1).unwrap(), Node::Null);
        let floats = Float64Array::from(vec![1.5]);
        assert_eq!(json(&node_at(&floats, 0).unwrap()), "1.5");
        let decimals = Decimal128Array::from(vec![12345])
            .with_precision_and_scale(7, 2)
            .unwrap();
        assert_eq!(json(&node_at(&decimals, 0).unwrap()), "123.45");
        let strings = StringArray::from(vec!["héllo"]);
        assert_eq!(
            node_at(&strings, 0).unwrap(),
            Node::String(Cow::Borrowed("héllo"))
        );
    }

    #[test]
    fn dates_and_timestamps_print_as_ion() {
        let dates = Date32Array::from(vec![11_556]); // 2001-08-22
        assert_eq!(json(&node_at(&dates, 0).unwrap()), "\"2001-08-22\"");
        let micros = TimestampMicrosecondArray::from(vec![998_491_530_123_456]);
        assert_eq!(
            json(&node_at(&micros, 0).unwrap()),
            "\"2001-08-22T14:45:30.123456-00:00\""
        );
        let utc = micros.with_timezone("UTC");
        assert_eq!(
            json(&node_at(&utc, 0).unwrap()),
            "\"2001-08-22T14:45:30.123456Z\""
        );
    }

    #[test]
    fn nested_values_become_arrays_and_objects() {
        let mut lists = ListBuilder::new(Int32Builder::new());
        lists.values().append_value(1);
        lists.values().append_value(2);
        lists.append(true);
        lists.append(false);
        let lists = lists.finish();
        assert_eq!(json(&node_at(&lists, 0).unwrap()), "[1,2]");
        assert_eq!(node_at(&lists, 1).unwrap(), Node::Null);
        let s = StructArray::from(vec![(
            Arc::new(Field::new("a", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["x"])) as ArrayRef,
        )]);
        assert_eq!(json(&node_at(&s, 0).unwrap()), r#"{"a":"x"}"#);
    }
}
