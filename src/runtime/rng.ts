import { assert } from "./assert.ts";

/**
 * A small seeded PRNG, xoshiro128** (Blackman and Vigna), seeded through splitmix32 so that any
 * 32-bit seed, zero included, gives a well-mixed state. Deterministic for a given seed: the
 * simulator replays a run from its seed, and backoff jitter is reproducible in tests.
 */
export class Rng {
  #s0: number;
  #s1: number;
  #s2: number;
  #s3: number;

  constructor(seed: number) {
    assert(Number.isInteger(seed), "Rng seed must be an integer");
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#s0 = next();
    this.#s1 = next();
    this.#s2 = next();
    this.#s3 = next();
  }

  /** A generator seeded from the platform's cryptographic source, for production. */
  static fromEntropy(): Rng {
    const seed = new Uint32Array(1);
    crypto.getRandomValues(seed);
    return new Rng(seed[0]!);
  }

  /** The next 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.#s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.#s1 << 9) >>> 0;
    this.#s2 = (this.#s2 ^ this.#s0) >>> 0;
    this.#s3 = (this.#s3 ^ this.#s1) >>> 0;
    this.#s1 = (this.#s1 ^ this.#s2) >>> 0;
    this.#s0 = (this.#s0 ^ this.#s3) >>> 0;
    this.#s2 = (this.#s2 ^ t) >>> 0;
    this.#s3 = rotl(this.#s3, 11);
    return result;
  }

  /** A float uniform in [0, 1), with 32 bits of randomness. */
  nextFloat(): number {
    return this.nextU32() / 0x1_0000_0000;
  }

  /** 64 random bits as 16 hex digits: partition revisions, cluster ids, unique names. */
  hex64(): string {
    return [this.nextU32(), this.nextU32()].map((x) => x.toString(16).padStart(8, "0")).join("");
  }

  /** An integer uniform in [minInclusive, maxInclusive]. */
  int(minInclusive: number, maxInclusive: number): number {
    assert(
      Number.isInteger(minInclusive) && Number.isInteger(maxInclusive) &&
        minInclusive <= maxInclusive,
      "Rng.int needs integer bounds with min <= max",
    );
    const span = maxInclusive - minInclusive + 1;
    return minInclusive + Math.floor(this.nextFloat() * span);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.nextFloat() < p;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
