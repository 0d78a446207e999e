import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/**
 * SigV4 for S3, as S3 wants it: the path is already URI-encoded once by `encodeKeyPath` and is
 * not encoded again, and the payload hash comes from the `x-amz-content-sha256` header (the
 * literal `UNSIGNED-PAYLOAD` for streamed PUTs).
 */
export function createS3Signer(credentials: S3Credentials, region: string, service = "s3"): SignatureV4 {
  return new SignatureV4({
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
    },
    region,
    service,
    sha256: Sha256,
    uriEscapePath: service !== "s3",
    applyChecksum: false,
  });
}

/** S3's URI encoding of a key: every byte but the unreserved ones, segment by segment. */
export function encodeKeyPath(key: string): string {
  return key.split("/").map((segment) =>
    encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  ).join("/");
}
