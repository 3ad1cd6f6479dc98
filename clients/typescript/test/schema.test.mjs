// The checked-in types (src/schema.ts) are what openapi-typescript makes of the document
// `hindsight serve` serves: this fails when a route or model changed and `npm run generate`
// was not run.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { Hindsight } from "../dist/index.js";
import { SCHEMA_FILE, schemaSource } from "../scripts/generate.mjs";
import { sharedServer } from "./server.mjs";

let server;
before(async () => (server = await sharedServer()));
after(() => server.stop());

test("src/schema.ts matches the served OpenAPI document", async () => {
  const served = await new Hindsight({ baseUrl: server.url }).openapi();
  const expected = await schemaSource(served);
  const checkedIn = await readFile(SCHEMA_FILE, "utf8");
  assert.ok(
    checkedIn === expected,
    "src/schema.ts is stale: run `npm run generate` in clients/typescript (after `make openapi`)",
  );
});

test("the client has a method for every route of the served document", async () => {
  const served = await new Hindsight({ baseUrl: server.url }).openapi();
  const covered = {
    "POST /v1/memories": "store",
    "POST /v1/memories/batch": "storeMany",
    "POST /v1/documents": "storeDocument",
    "POST /v1/retrieve": "retrieve",
    "POST /v1/context": "context",
    "GET /v1/users/{user_id}/memories": "listMemories",
    "GET /v1/memories/{memory_id}": "get",
    "DELETE /v1/memories/{memory_id}": "delete",
    "PATCH /v1/memories/{memory_id}": "pin",
    "POST /v1/memories/{memory_id}/restore": "restore",
    "GET /v1/users/{user_id}/export": "exportUser",
    "DELETE /v1/users/{user_id}": "eraseUser",
    "POST /v1/reflect": "reflect",
    "GET /v1/users/{user_id}/reflection": "reflectionStatus",
    "POST /v1/semantic/{memory_id}/approve": "approve",
    "POST /v1/semantic/{memory_id}/reject": "reject",
    "GET /v1/jobs/{job_id}": "jobStatus",
    "GET /v1/health": "health",
    "GET /v1/openapi.json": "openapi",
  };
  // served to other clients than this one: MCP's own protocol, the browser pages
  const elsewhere = new Set(["POST /mcp", "GET /docs", "GET /explorer", "GET /explorer/assets/{name}"]);
  const routes = Object.entries(served.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
  const missing = routes.filter((route) => !covered[route] && !elsewhere.has(route));
  assert.deepEqual(missing, [], "routes the TypeScript client has no method for");
  for (const method of Object.values(covered)) {
    assert.equal(typeof Hindsight.prototype[method], "function", method);
  }
});
