import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The credential a node presents on node-to-node calls (replica fetches): an HMAC-SHA256 of its
 * id under `[cluster] secret`. A process without the secret cannot make one, and the secret
 * itself never travels.
 */
export function nodeToken(secret: string, nodeId: number): string {
  return createHmac("sha256", secret).update(`strata-node:${nodeId}`).digest("hex");
}

/** Whether `token` is node `nodeId`'s under `secret`, compared in constant time. */
export function verifyNodeToken(secret: string, nodeId: number, token: string): boolean {
  const expected = Buffer.from(nodeToken(secret, nodeId), "utf8");
  const given = Buffer.from(token, "utf8");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
