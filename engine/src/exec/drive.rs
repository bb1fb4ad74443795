//! The drivers: every chunk of a text object through a row loop, on the caller's thread or
//! on `n` threads, output in input order.
//!
//! With one thread, everything happens on the caller's thread. With `n`, the caller and
//! `n - 1` more threads take turns cutting the next chunk (under a lock: cutting is cheap
//! next to scanning), scan chunks side by side, and hand each output to [`Ordered`], which
//! writes outputs to the sink in input order — whichever worker completes the next chunk in
//! sequence writes it. No thread waits on another except to take a turn at a lock. Tokens
//! bound the chunks between cutting and writing to `2n + 2`.
//!
//! A driver knows nothing of formats: each worker gets its own row loop from `new_loop`
//! (the CSV loop owns a scanner), a function from a chunk's bytes to its [`ChunkOut`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;

use crate::csv::chunk::Window;
use crate::csv::{ChunkBuf, Chunker};
use crate::err;
use crate::error::{Result, SelectError};
use crate::eval::bind::Plan;
use crate::exec::emit::{ChunkOut, Emitter};
use crate::exec::Sink;

/// Processes every chunk, on this thread or on `threads` workers; returns the bytes
/// consumed.
pub(super) fn drive<'a, W, F, L>(
    chunker: Chunker<W>,
    threads: usize,
    plan: &Plan,
    new_loop: &F,
    sink: &mut (dyn Sink + Send),
    emitter: &mut Emitter<'_>,
) -> Result<u64>
where
    W: Window<'a> + Send,
    F: Fn() -> L + Sync,
    L: FnMut(&[u8], &mut ChunkOut) -> Result<()>,
{
    if threads <= 1 {
        sequential(chunker, plan, new_loop(), sink, emitter)
    } else {
        parallel(chunker, threads, plan, new_loop, sink, emitter)
    }
}

fn sequential<'a, W: Window<'a>>(
    mut chunker: Chunker<W>,
    plan: &Plan,
    mut rows: impl FnMut(&[u8], &mut ChunkOut) -> Result<()>,
    sink: &mut (dyn Sink + Send),
    emitter: &mut Emitter<'_>,
) -> Result<u64> {
    let mut spare = None;
    let mut out = ChunkOut::new(plan);
    let mut rows_before = 0;
    while let Some(chunk) = chunker.next_chunk(spare.take())? {
        out.reset(plan, rows_before);
        rows(chunk.bytes(), &mut out)?;
        rows_before += out.rows;
        if !emitter.emit(&mut out, sink, chunker.consumed())? {
            break;
        }
        spare = chunk.into_buf();
    }
    Ok(chunker.consumed())
}

fn parallel<'a, W, F, L>(
    chunker: Chunker<W>,
    threads: usize,
    plan: &Plan,
    new_loop: &F,
    sink: &mut (dyn Sink + Send),
    emitter: &mut Emitter<'_>,
) -> Result<u64>
where
    W: Window<'a> + Send,
    F: Fn() -> L + Sync,
    L: FnMut(&[u8], &mut ChunkOut) -> Result<()>,
{
    let stop = AtomicBool::new(false);
    let consumed = AtomicU64::new(0);
    let feed = Mutex::new(Feed {
        chunker,
        seq: 0,
        done: false,
    });
    // A worker takes a token before it cuts a chunk and it comes back once that chunk's
    // output is written, with the chunk's buffer for reuse (`None` for borrowed chunks).
    let tokens = 2 * threads + 2;
    let (pool_tx, pool_rx) = sync_channel::<Option<ChunkBuf>>(tokens);
    for _ in 0..tokens {
        // The pool holds exactly `tokens`, so these sends cannot block or fail.
        let _ = pool_tx.send(None);
    }
    let pool_rx = Mutex::new(pool_rx);
    // Output buffers go back to the workers: a fresh buffer per chunk would be
    // page-faulted in and grown again every time.
    let (spent_tx, spent_rx) = sync_channel::<Vec<u8>>(tokens);
    let spent_rx = Mutex::new(spent_rx);
    let ordered = Mutex::new(Ordered {
        sink,
        emitter,
        waiting: BTreeMap::new(),
        next: 0,
        rows_before: 0,
        pool_tx: Some(pool_tx),
        spent_tx,
        error: None,
    });
    let work = || {
        let mut rows = new_loop();
        while !stop.load(Ordering::Relaxed) {
            let spare = match pool_rx.lock().map(|rx| rx.recv()) {
                Ok(Ok(spare)) => spare,
                _ => break,
            };
            let (seq, next) = {
                let Ok(mut f) = feed.lock() else { break };
                if f.done {
                    break;
                }
                let seq = f.seq;
                f.seq += 1;
                let next = f.chunker.next_chunk(spare);
                consumed.store(f.chunker.consumed(), Ordering::Relaxed);
                f.done = !matches!(next, Ok(Some(_)));
                (seq, next)
            };
            let (res, buf) = match next {
                Ok(None) => break,
                Ok(Some(chunk)) => {
                    let mut out = ChunkOut::new(plan);
                    if let Some(mut bytes) = spent_rx.lock().ok().and_then(|rx| rx.try_recv().ok())
                    {
                        bytes.clear();
                        out.bytes = bytes;
                    }
                    let r = rows(chunk.bytes(), &mut out).map(|_| out);
                    (r, chunk.into_buf())
                }
                Err(e) => (Err(e), None),
            };
            let Ok(mut o) = ordered.lock() else { break };
            if !o.offer(seq, res, buf, consumed.load(Ordering::Relaxed)) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    let o = ordered
        .into_inner()
        .map_err(|_| err!(InternalError, "a scan thread panicked"))?;
    if let Some(e) = o.error {
        return Err(e);
    }
    Ok(consumed.load(Ordering::Relaxed))
}

/// Outputs of a parallel scan waiting for their turn to be written.
struct Ordered<'s, 'e> {
    sink: &'s mut (dyn Sink + Send),
    emitter: &'s mut Emitter<'e>,
    waiting: BTreeMap<u64, (Result<ChunkOut>, Option<ChunkBuf>)>,
    /// The sequence number to write next.
    next: u64,
    rows_before: u64,
    /// Dropped when the scan ends early, which wakes workers waiting for a token.
    pool_tx: Option<SyncSender<Option<ChunkBuf>>>,
    spent_tx: SyncSender<Vec<u8>>,
    error: Option<SelectError>,
}

impl Ordered<'_, '_> {
    /// Takes chunk `seq`'s result and writes every output that is now next in order.
    /// Returns false when the scan should stop (an error, or LIMIT reached).
    fn offer(
        &mut self,
        seq: u64,
        res: Result<ChunkOut>,
        buf: Option<ChunkBuf>,
        consumed: u64,
    ) -> bool {
        if self.pool_tx.is_none() {
            return false;
        }
        self.waiting.insert(seq, (res, buf));
        while let Some((res, buf)) = self.waiting.remove(&self.next) {
            if let Some(tx) = &self.pool_tx {
                let _ = tx.try_send(buf);
            }
            let written = res.and_then(|mut out| {
                out.rows_before = self.rows_before;
                self.rows_before += out.rows;
                let more = self.emitter.emit(&mut out, &mut *self.sink, consumed)?;
                let _ = self.spent_tx.try_send(std::mem::take(&mut out.bytes));
                Ok(more)
            });
            match written {
                Ok(true) => self.next += 1,
                Ok(false) => {
                    self.pool_tx = None;
                    return false;
                }
                Err(e) => {
                    self.error = Some(e);
                    self.pool_tx = None;
                    return false;
                }
            }
        }
        true
    }
}

/// The chunker shared by the workers, with the next chunk's sequence number.
struct Feed<W> {
    chunker: Chunker<W>,
    seq: u64,
    done: bool,
}
