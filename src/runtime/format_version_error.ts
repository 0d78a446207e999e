/**
 * Stored data in a format this server does not read: a data directory, a partition's files or a
 * bucket written by a server of another format version. Refused by name, never misread.
 */
export class FormatVersionError extends Error {
  override name = "FormatVersionError";
  readonly found: unknown;
  readonly expected: number;

  /** `what` names the data, e.g. "the data directory /var/lib/strata". */
  constructor(what: string, found: unknown, expected: number) {
    super(
      `Cannot read ${what}: it is in format version ${String(found)}, this server reads format version ` +
        `${expected} (docs/FORMAT.md, "Format versions")`,
    );
    this.found = found;
    this.expected = expected;
  }
}

/**
 * The format version of everything Strata stores: the metadata, superblocks, segments (Kafka
 * RecordBatch v2), `.remote` markers, manifests and the objects' `format-version`. Version 1 stored
 * batches in a format of its own.
 */
export const storageFormatVersion = 2;
