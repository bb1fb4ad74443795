//! The font the workspace's charts draw their text with (the TPC-DS report's and the
//! benches'). It lives here because this is the crate both depend on without DataFusion.

use std::sync::Once;

use plotters::style::FontStyle;

static FONT: Once = Once::new();

/// Registers the embedded font for plotters' text (idempotent). Every chart drawn in this
/// workspace needs it: plotters is built with `ab_glyph`, which draws no text without it.
pub fn register() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/DejaVuSansMono.ttf");
        for family in ["sans-serif", "serif", "monospace"] {
            // The font is embedded and known good; a failure would only lose PNG text.
            let _ = plotters::style::register_font(family, FontStyle::Normal, bytes);
            let _ = plotters::style::register_font(family, FontStyle::Bold, bytes);
        }
    });
}
