// Runs s3rver in its own Node process, printing "port <n>" once it listens. s3rver builds
// ListObjectsV2 continuation tokens with DES, which Node 20's OpenSSL 3 offers only through its
// legacy provider: the parent starts this file with --openssl-legacy-provider, so the workaround
// stays inside the test fake and never touches the process under test.
import S3rver from "s3rver";

const directory = process.argv[2];
// A port to listen on (to come back where a stopped instance was); any free port by default.
const port = Number(process.argv[3] ?? 0);
const server = new S3rver({
  port,
  address: "127.0.0.1",
  silent: process.env.S3RVER_LOG !== "1",
  directory,
});
const listening = await server.run();
console.log(`port ${listening.port}`);
process.on("SIGTERM", async () => {
  await server.close();
  process.exit(0);
});
