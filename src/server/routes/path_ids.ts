import { badRequest } from "../api_errors.ts";

/**
 * An id of a path segment (a group id, a transactional id): URL-decoded, 1 to `charsMax`
 * characters, else 400 with `code`; `what` names it in the message.
 */
export function pathIdOf(segment: string | undefined, what: string, code: string, charsMax: number): string {
  let id: string;
  try {
    id = decodeURIComponent(segment ?? "");
  } catch (error) {
    throw badRequest(code, `Cannot use the ${what}: it is not URL-encoded text`, { cause: error });
  }
  if (id.length < 1 || id.length > charsMax) {
    throw badRequest(code, `Cannot use the ${what}: it must be 1 to ${charsMax} characters`);
  }
  return id;
}
