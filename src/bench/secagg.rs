//! `fgl-sim bench secagg`: one secure-aggregation round by client count — bytes each
//! client sends, bytes through the server, and wall time — for SecAgg (every pair of
//! clients masks) and SecAgg+ (k neighbours), with and without dropouts.

use crate::defenses::secagg::{SecAggConfig, time_round};
use crate::error::Result;

/// Prints the table for a model of `len` parameters, each figure the median of `reps` rounds.
pub fn secagg(len: usize, reps: usize) -> Result<()> {
    println!(
        "bench secagg: one round, a model of {len} parameters (+1 weight), {} threads, median of {reps}",
        rayon::current_num_threads()
    );
    println!("| clients | neighbours | dropped | KiB sent per client | MiB through the server | ms |\n|---:|---:|---:|---:|---:|---:|");
    let full = |neighbors| SecAggConfig { threshold: 0.5, dropout: 0.0, neighbors, fraction_bits: 24, dp: None };
    let cases: [(usize, Option<usize>, usize); 8] = [
        (10, None, 0),
        (10, None, 2),
        (50, None, 0),
        (100, None, 0),
        (100, None, 20),
        (100, Some(16), 20),
        (1000, Some(32), 0),
        (1000, Some(32), 200),
    ];
    for (clients, neighbors, dropped) in cases {
        let mut last = None;
        let ms = super::median_ms(reps, || {
            last = Some(time_round(&full(neighbors), clients, len, dropped, 1)?);
            Ok(())
        })?;
        let c = last.expect("at least one rep");
        let k = neighbors.map_or(clients - 1, |k| k);
        println!(
            "| {clients} | {k} | {dropped} | {:.1} | {:.2} | {ms:.1} |{}",
            c.bytes_per_client / 1024.0,
            c.server_bytes / (1024.0 * 1024.0),
            c.aborted.map(|a| format!(" aborted: {a}")).unwrap_or_default()
        );
    }
    Ok(())
}
