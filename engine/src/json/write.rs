//! [`Node`] → compact JSON text: how nested values leave the engine (JSON output, and the
//! text a nested value becomes in CSV output).

use crate::json::Node;
use crate::output::{json_string, json_value};

/// Appends `node` as compact JSON (no whitespace). Numbers are written as they were read.
pub fn write_node(out: &mut Vec<u8>, node: &Node<'_>) {
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Number(n) => out.extend_from_slice(n.as_bytes()),
        Node::Scalar(v) => json_value(out, &v.value()),
        Node::String(s) => json_string(out, s),
        Node::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_node(out, item);
            }
            out.push(b']');
        }
        Node::Object(members) => {
            out.push(b'{');
            for (i, (key, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(out, key);
                out.push(b':');
                write_node(out, value);
            }
            out.push(b'}');
        }
    }
}
