//! The progress line of a long repository audit, drawn on standard error
//! only when it is a terminal and only once the audit has run for a while
//! (small audits never show it), and the `indicatif` bar of payload
//! verifies (files and bytes hashed), also on a terminal's standard error.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::audit::Progress;

/// How long an audit runs before the line appears.
const DELAY: Duration = Duration::from_millis(400);
/// Minimum time between redraws.
const REDRAW: Duration = Duration::from_millis(100);

/// Draws `phase: done/total unit` on one terminal line, rewritten in place.
pub(crate) struct TerminalProgress<'w> {
    out: &'w mut dyn Write,
    start: Instant,
    delay: Duration,
    last: Option<Instant>,
    phase: String,
    unit: &'static str,
    total: u64,
    done: u64,
}

impl<'w> TerminalProgress<'w> {
    pub(crate) fn new(out: &'w mut dyn Write) -> Self {
        Self::with_delay(out, DELAY)
    }

    fn with_delay(out: &'w mut dyn Write, delay: Duration) -> Self {
        TerminalProgress {
            out,
            start: Instant::now(),
            delay,
            last: None,
            phase: String::new(),
            unit: "",
            total: 0,
            done: 0,
        }
    }

    fn draw(&mut self, force: bool) {
        let now = Instant::now();
        if now.duration_since(self.start) < self.delay {
            return;
        }
        if !force && self.last.is_some_and(|l| now.duration_since(l) < REDRAW) {
            return;
        }
        self.last = Some(now);
        let amount = |n: u64| {
            if self.unit == "bytes" {
                format!("{:.1}", n as f64 / (1024.0 * 1024.0))
            } else {
                n.to_string()
            }
        };
        let unit = if self.unit == "bytes" {
            "MiB"
        } else {
            self.unit
        };
        let line = if self.total > 0 {
            format!(
                "{}: {}/{} {unit} ({}%)",
                self.phase,
                amount(self.done.min(self.total)),
                amount(self.total),
                self.done.min(self.total) * 100 / self.total
            )
        } else {
            format!("{}: {} {unit}", self.phase, amount(self.done))
        };
        let _ = write!(self.out, "\r\x1b[2K{line}");
        let _ = self.out.flush();
    }
}

impl Progress for TerminalProgress<'_> {
    fn phase(&mut self, name: &str, unit: &'static str, total: u64) {
        // Phase names carry session directory names, which anyone can choose.
        self.phase = super::render::printable(name).into_owned();
        self.unit = unit;
        self.total = total;
        self.done = 0;
        self.draw(true);
    }

    fn advance(&mut self, n: u64) {
        self.done += n;
        self.draw(false);
    }

    fn finish(&mut self) {
        if self.last.is_some() {
            let _ = write!(self.out, "\r\x1b[2K");
            let _ = self.out.flush();
            self.last = None;
        }
    }
}

/// The bar of a payload verify: files checked of all claimed, bytes hashed.
/// The library reports through [`crate::evidence::FileProgress`]; this
/// draws on standard error (callers create it only when that is a terminal).
pub(crate) struct PayloadBar {
    bar: indicatif::ProgressBar,
    bytes: std::sync::atomic::AtomicU64,
}

impl PayloadBar {
    pub(crate) fn new() -> PayloadBar {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(0),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "verifying {bar:30} {pos}/{len} files, {msg} hashed [{elapsed}]",
        ) {
            bar.set_style(style);
        }
        PayloadBar {
            bar,
            bytes: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl crate::evidence::FileProgress for PayloadBar {
    fn start(&self, files: u64) {
        self.bar.inc_length(files);
    }

    fn done(&self, bytes: u64) {
        use std::sync::atomic::Ordering;
        let total = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.bar
            .set_message(indicatif::HumanBytes(total).to_string());
        self.bar.inc(1);
    }
}

impl Drop for PayloadBar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_in_place_and_clears_at_the_end() {
        let mut buf = Vec::new();
        {
            let mut p = TerminalProgress::with_delay(&mut buf, Duration::ZERO);
            p.phase("re-hashing recorded files", "files", 4);
            p.advance(2);
            p.phase(
                "verifying .omo/ulw-loop/ledger.jsonl",
                "bytes",
                2 * 1024 * 1024,
            );
            p.finish();
        }
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.starts_with("\r\x1b[2Kre-hashing recorded files: 0/4 files (0%)"),
            "{text:?}"
        );
        assert!(
            text.contains("verifying .omo/ulw-loop/ledger.jsonl: 0.0/2.0 MiB (0%)"),
            "{text:?}"
        );
        assert!(text.ends_with("\r\x1b[2K"), "{text:?}");
    }

    #[test]
    fn phase_names_cannot_drive_the_terminal() {
        let mut buf = Vec::new();
        {
            let mut p = TerminalProgress::with_delay(&mut buf, Duration::ZERO);
            p.phase(
                "verifying .omo/ulw-loop/\x1b]0;pwned\x07/ledger.jsonl",
                "bytes",
                1,
            );
            p.finish();
        }
        let text = String::from_utf8(buf).unwrap();
        assert!(
            text.contains("verifying .omo/ulw-loop/\\u{1b}]0;pwned\\u{7}/ledger.jsonl"),
            "{text:?}"
        );
        assert_eq!(
            text.matches('\x1b').count(),
            2,
            "only the redraw codes: {text:?}"
        );
    }

    #[test]
    fn a_short_audit_draws_nothing() {
        let mut buf = Vec::new();
        {
            let mut p = TerminalProgress::with_delay(&mut buf, Duration::from_secs(3600));
            p.phase("re-hashing recorded files", "files", 4);
            p.advance(4);
            p.finish();
        }
        assert!(buf.is_empty());
    }
}
