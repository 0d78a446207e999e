import { assert } from "../../runtime/assert.ts";

/** A partition whose marker could not be written, and why. */
export interface MarkerFailure {
  /** `txnPartitionKey`. */
  partition: string;
  error: unknown;
}

/** Some of a transaction's markers could not be written: `remaining` names their partitions. */
export class MarkersNotWrittenError extends Error {
  override name = "MarkersNotWrittenError";
  readonly remaining: readonly string[];

  constructor(failures: readonly MarkerFailure[]) {
    assert(failures.length > 0, "a marker write that failed names a partition");
    const first = failures[0]!;
    super(
      `Cannot write the transaction markers of ${failures.length} partitions, ${first.partition} among them`,
      { cause: first.error },
    );
    this.remaining = failures.map((f) => f.partition);
  }
}
