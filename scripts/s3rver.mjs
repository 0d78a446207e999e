// Runs s3rver in its own Node process, printing "port <n>" once it listens. s3rver builds
// ListObjectsV2 continuation tokens with DES, which Node 20's OpenSSL 3 offers only through its
// legacy provider: the parent starts this file with --openssl-legacy-provider, so the workaround
// stays inside the test fake and never touches the process under test.
import S3rver from "s3rver";

const directory = process.argv[2];
const server = new S3rver({
  port: 0,
  address: "127.0.0.1",
  silent: process.env.S3RVER_LOG !== "1",
  directory,
});
const { port } = await server.run();
console.log(`port ${port}`);
process.on("SIGTERM", async () => {
  await server.close();
  process.exit(0);
});
