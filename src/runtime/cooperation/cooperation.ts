/**
 * The cooperative controls, as one switch the pump benchmark can turn off for its `naive` phase
 * (docs/BENCHMARKS.md, "What it does"): with `naive` set, uploads read and hash a whole segment at
 * once without pieces or yields, chunk fills write a whole chunk without yields, and the upload and
 * fetch concurrency caps are lifted. It exists only to show what the design prevents: no
 * configuration key reaches it, and the server runs with `cooperative`, which is frozen.
 */
export interface Cooperation {
  readonly naive: boolean;
}

export const cooperative: Cooperation = Object.freeze({ naive: false });

/** Concurrency standing in for "no cap" in the naive mode; still a bound, as every limit here. */
export const naiveConcurrencyMax = 1024;
