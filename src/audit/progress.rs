//! Progress of a long audit, reported to whoever runs it (the CLI draws a
//! line on a terminal; the library never prints). Callbacks come from the
//! calling thread only, so implementations need no synchronisation.

/// Receives progress of an audit.
pub trait Progress {
    /// A new phase begins; `total` is its amount of work in `unit`s (0 when
    /// unknown).
    fn phase(&mut self, name: &str, unit: &'static str, total: u64);
    /// `n` more units of the current phase are done.
    fn advance(&mut self, n: u64);
    /// The audit is over (clear any indicator).
    fn finish(&mut self);
}

/// Discards progress.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn phase(&mut self, _: &str, _: &'static str, _: u64) {}
    fn advance(&mut self, _: u64) {}
    fn finish(&mut self) {}
}

/// A `BufRead` adapter that reports consumed bytes to a [`Progress`] every
/// `step` bytes.
pub(crate) struct CountingReader<'p, R> {
    inner: R,
    progress: &'p mut dyn Progress,
    pending: u64,
    step: u64,
}

impl<'p, R> CountingReader<'p, R> {
    pub(crate) fn new(inner: R, progress: &'p mut dyn Progress) -> Self {
        CountingReader {
            inner,
            progress,
            pending: 0,
            step: 1024 * 1024,
        }
    }
}

impl<R: std::io::BufRead> std::io::Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count(n);
        Ok(n)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for CountingReader<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.count(amt);
    }
}

impl<R> CountingReader<'_, R> {
    fn count(&mut self, n: usize) {
        self.pending += n as u64;
        if self.pending >= self.step {
            self.progress.advance(self.pending);
            self.pending = 0;
        }
    }
}

impl<R> Drop for CountingReader<'_, R> {
    fn drop(&mut self) {
        if self.pending > 0 {
            self.progress.advance(self.pending);
        }
    }
}
