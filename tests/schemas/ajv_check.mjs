// ajv strict mode over every schema `evidence-gate schema NAME` prints, and
// over the fixtures of tests/schemas/cases.json (each accepted or refused as
// the case says; tests/integration/schemas.rs proves the same cases against
// the verifier, the jsonschema crate and Python's jsonschema).
//
// Usage: node tests/schemas/ajv_check.mjs NODE_MODULES_DIR SCHEMA_DIR
// SCHEMA_DIR holds NAME.json for each schema. Exit 1 on any disagreement.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [modules, schemaDir] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), "ajv-check.cjs"));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const validators = new Map();
let failures = 0;
for (const file of fs.readdirSync(schemaDir).filter((f) => f.endsWith(".json")).sort()) {
  const name = file.slice(0, -".json".length);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  try {
    validators.set(name, ajv.compile(JSON.parse(fs.readFileSync(path.join(schemaDir, file), "utf8"))));
    console.log(`ajv strict: schema ${name} compiles`);
  } catch (e) {
    failures++;
    console.log(`ajv strict: schema ${name} REFUSED: ${e.message}`);
  }
}
const { cases } = JSON.parse(fs.readFileSync(path.join(repo, "tests/schemas/cases.json"), "utf8"));
let checked = 0;
for (const c of cases) {
  const validate = validators.get(c.schema);
  if (!validate) {
    failures++;
    console.log(`no schema ${c.schema} for ${c.file}`);
    continue;
  }
  const ok = validate(JSON.parse(fs.readFileSync(path.join(repo, c.file), "utf8")));
  checked++;
  if (ok !== c.valid) {
    failures++;
    console.log(`${c.file}: ajv says ${ok ? "valid" : "invalid"}, the verifier says ${c.valid ? "valid" : "invalid"}`, validate.errors ?? "");
  }
}
console.log(`${checked} fixtures checked with ajv strict; ${failures} disagreements`);
console.log(`${checked + validators.size - failures} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
