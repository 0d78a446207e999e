import { spawnSync } from "node:child_process";

/** Why ISA-L's library (the server's native CRC32C) cannot be used here, or null when it can. */
export function isalUnavailableReason(): string | null {
  const listing = spawnSync("ldconfig", ["-p"], { encoding: "utf8" });
  if (listing.status !== 0) return "ldconfig -p failed; cannot tell whether libisal.so.2 is installed";
  return /libisal\.so\.2 /.test(listing.stdout)
    ? null
    : "libisal.so.2 is not installed (apt-get install libisal2)";
}
