/** How to reach one bucket of an S3-compatible store, and the bounds on the connections to it. */
export interface S3Settings {
  /** e.g. "http://127.0.0.1:7480" or "https://s3.eu-central-1.amazonaws.com". */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  urlStyle: "path" | "virtual";
  /** Use `If-None-Match: *` for create-if-absent; otherwise HEAD then PUT. */
  conditionalWrites: boolean;
  connectionIdleTimeoutMs: number;
  /** Connections per endpoint. */
  connectionsMax: number;
  /** Per-attempt timeout when the caller gives none. */
  requestTimeoutMs: number;
}
