import { timingSafeEqual } from "node:crypto";

/**
 * SASL/PLAIN (RFC 4616): the client's one message is `[authzid] NUL authcid NUL passwd`, UTF-8. The
 * user is the authcid; an authzid, when given, must be the same user (no one acts for another).
 */

/** Bytes a PLAIN message may take at most: names and passwords are short. */
export const plainMessageBytesMax = 4096;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The user a PLAIN message authenticates, or null (a malformed message, an unknown user, a wrong password). */
export function authenticatePlain(message: Uint8Array, users: ReadonlyMap<string, string>): string | null {
  if (message.length > plainMessageBytesMax) return null;
  const first = message.indexOf(0);
  const second = first < 0 ? -1 : message.indexOf(0, first + 1);
  if (first < 0 || second < 0) return null;
  let authzid: string;
  let user: string;
  try {
    authzid = fromUtf8.decode(message.subarray(0, first));
    user = fromUtf8.decode(message.subarray(first + 1, second));
  } catch (error) {
    // Names that are not UTF-8 (the strict decoder's TypeError): a malformed message, refused as one
    // by the caller, which counts and logs the refused authentication.
    if (error instanceof TypeError) return null;
    throw error;
  }
  if (authzid !== "" && authzid !== user) return null;
  const expected = users.get(user);
  if (expected === undefined) return null;
  const given = message.subarray(second + 1);
  const wanted = utf8.encode(expected);
  // Compared in constant time, so that the time of a refusal tells nothing of the password.
  return given.length === wanted.length && timingSafeEqual(given, wanted) ? user : null;
}
