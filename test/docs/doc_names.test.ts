import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import t from "tap";
import ts from "typescript";

/**
 * The names the reference docs (docs/*.md and README.md) put in backticks must exist, so a file
 * moved or a method renamed fails here until the docs say what the code says now. docs/notes/ is
 * history and may name what no longer exists, so it is not read.
 *
 * What a backticked token is checked as:
 * - a path relative to the repository (its first part a top-level entry such as `src/`, `scripts/`,
 *   `test/`, `docs/`): the file or folder exists (`*` matches any characters). Such paths are also
 *   checked among the words of a backticked command and of fenced code blocks, where nothing else is;
 * - a source file's name (`name.ts`, `.mjs`, `.js`, `.sh`, `.py`): a file of that name exists under
 *   src/, scripts/ or test/;
 * - `Owner.member`, `Owner.#member`, `Owner.member()` with a capitalized owner: a class, interface,
 *   type or const object declared under that name declares the member, itself or through what it
 *   extends or implements;
 * - a bare lowerCamelCase identifier, optionally with `()`, or a `#private` one: something of that
 *   name is declared (a function, variable, class or interface member, a const object's property),
 *   or the code uses it as a string value (a reason code such as `fencedEpoch`);
 * - a bare PascalCase identifier with an inner capital (`TierService`): a class, interface, type,
 *   enum, function or variable of that name is declared, or the code uses it as a string value (a
 *   group state);
 * - `value.member` with a lowercase first part (`options.readReplicaOf`): each lowerCamelCase part
 *   after the first (a local variable's name) is declared, as above.
 * "Declared" means in src/ or scripts/, or in test/helpers/, the shared test code the docs' testing
 * section names. Anything else (config keys, metric names, JSON fields, error codes) is not checked.
 */

const root = new URL("../../", import.meta.url).pathname;

/** Owners of members the docs name that belong to the platform, not to this repository. */
const foreignOwners: Record<string, string> = {
  Deno: "Deno's runtime API",
  ArrayBuffer: "JavaScript's ArrayBuffer",
  Promise: "JavaScript's Promise",
  FileHandle: "node:fs/promises",
  FsFile: "Deno.FsFile",
};

/** Names the docs use that belong to the platform, a library or a protocol, with where from. */
const foreignNames: Record<string, string> = {
  ArrayBuffer: "JavaScript's ArrayBuffer",
  GCProfiler: "node:v8",
  getHeapSpaceStatistics: "node:v8",
  setImmediate: "Node's timers",
  GetObject: "an S3 operation",
  PutObject: "an S3 operation",
  LastModified: "an S3 object's field",
  keyLength: "a field of Kafka's record format",
  valueLength: "a field of Kafka's record format",
  maxWaitTimeInMs: "a kafkajs consumer option",
  windowLogMax: "a libzstd parameter",
  VmRSS: "a field of Linux's /proc/PID/status",
};

/** What the code declares: every name, and the members of each named owner. */
export interface Declarations {
  names: Set<string>;
  /** Owner name to its members' names (private ones with their `#`). */
  members: Map<string, Set<string>>;
  /** Owner name to the names it extends or implements. */
  bases: Map<string, string[]>;
  /** The text of every string literal, for words the code uses as values. */
  strings: Set<string>;
}

/** The declarations of `files` (path to TypeScript or JavaScript source text). */
export function declarationsOf(files: Map<string, string>): Declarations {
  const found: Declarations = { names: new Set(), members: new Map(), bases: new Map(), strings: new Set() };
  const addMember = (owner: string, name: string) => {
    let set = found.members.get(owner);
    if (set === undefined) found.members.set(owner, set = new Set());
    set.add(name);
    found.names.add(name);
  };
  const addBase = (owner: string, base: string) => {
    found.bases.set(owner, [...(found.bases.get(owner) ?? []), base]);
  };
  const ownMembers = (owner: string, members: readonly ts.Node[]) => {
    for (const member of members) {
      const name = memberName(member);
      if (name !== null) addMember(owner, name);
      if (!ts.isConstructorDeclaration(member)) continue;
      for (const parameter of member.parameters) {
        const isProperty = (ts.getModifiers(parameter) ?? []).length > 0;
        if (isProperty && ts.isIdentifier(parameter.name)) addMember(owner, parameter.name.text);
      }
    }
  };
  const typeMembers = (owner: string, type: ts.TypeNode) => {
    if (ts.isTypeLiteralNode(type)) ownMembers(owner, type.members);
    if (!ts.isIntersectionTypeNode(type) && !ts.isUnionTypeNode(type)) return;
    for (const part of type.types) {
      if (ts.isTypeReferenceNode(part)) addBase(owner, part.typeName.getText());
      else typeMembers(owner, part);
    }
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.strings.add(node.text);
    if ((ts.isFunctionDeclaration(node) || ts.isModuleDeclaration(node)) && node.name !== undefined) {
      found.names.add(node.name.text);
    } else if (ts.isClassDeclaration(node) || ts.isClassExpression(node) || ts.isInterfaceDeclaration(node)) {
      const owner = node.name?.text ?? "";
      if (owner !== "") found.names.add(owner);
      ownMembers(owner, node.members);
      for (const clause of node.heritageClauses ?? []) {
        for (const type of clause.types) addBase(owner, type.expression.getText());
      }
    } else if (ts.isTypeAliasDeclaration(node)) {
      found.names.add(node.name.text);
      typeMembers(node.name.text, node.type);
    } else if (ts.isEnumDeclaration(node)) {
      found.names.add(node.name.text);
      for (const member of node.members) addMember(node.name.text, member.name.getText());
    } else if (ts.isVariableDeclaration(node)) {
      for (const name of boundNames(node.name)) found.names.add(name);
      const object = node.initializer === undefined ? null : objectLiteralOf(node.initializer);
      if (object !== null && ts.isIdentifier(node.name)) ownMembers(node.name.text, object.properties);
    }
    ts.forEachChild(node, visit);
  };
  for (const [path, text] of files) {
    const kind = path.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
    visit(ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind));
  }
  return found;
}

/** The name a class, interface, type literal or object literal member declares, if any. */
function memberName(member: ts.Node): string | null {
  const named = ts.isMethodDeclaration(member) || ts.isPropertyDeclaration(member) ||
    ts.isGetAccessorDeclaration(member) || ts.isSetAccessorDeclaration(member) ||
    ts.isPropertySignature(member) || ts.isMethodSignature(member) || ts.isPropertyAssignment(member) ||
    ts.isShorthandPropertyAssignment(member);
  if (!named) return null;
  const name = member.name;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return null;
}

/** The identifiers a declaration binds, destructuring included. */
function boundNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((element) => ts.isBindingElement(element) ? boundNames(element.name) : []);
}

/** The object literal a const is initialized with, through `as`, `satisfies` and `Object.freeze`. */
function objectLiteralOf(expression: ts.Expression): ts.ObjectLiteralExpression | null {
  if (ts.isObjectLiteralExpression(expression)) return expression;
  if (ts.isAsExpression(expression) || ts.isSatisfiesExpression(expression)) {
    return objectLiteralOf(expression.expression);
  }
  if (ts.isParenthesizedExpression(expression)) return objectLiteralOf(expression.expression);
  if (ts.isCallExpression(expression) && expression.arguments.length === 1) {
    return objectLiteralOf(expression.arguments[0]!);
  }
  return null;
}

/** Whether `owner` or what it extends or implements declares `member`. */
function declaresMember(
  decls: Declarations,
  owner: string,
  member: string,
  seen = new Set<string>(),
): boolean {
  if (seen.has(owner)) return false;
  seen.add(owner);
  if (decls.members.get(owner)?.has(member)) return true;
  return (decls.bases.get(owner) ?? []).some((base) => declaresMember(decls, base, member, seen));
}

/** A backticked token of a doc, or a word of a fenced code block, with the line it starts on (from 1). */
export interface DocToken {
  token: string;
  line: number;
  fenced: boolean;
}

const fencePattern = /^ *(```|~~~)[^\n]*\n[\s\S]*?^ *\1[^\n]*$/gm;

/** The backticked tokens of a Markdown text outside fenced code blocks, and the words inside them. */
export function docTokens(text: string): DocToken[] {
  const tokens: DocToken[] = [];
  const lineAt = (index: number) => text.slice(0, index).split("\n").length;
  for (const block of text.matchAll(fencePattern)) {
    const first = lineAt(block.index);
    block[0].split("\n").forEach((line, i) => {
      for (const word of line.split(/\s+/)) {
        if (word !== "") tokens.push({ token: word, line: first + i, fenced: true });
      }
    });
  }
  // Fenced blocks become spaces, so offsets stay where they were.
  const prose = text.replace(fencePattern, (block) => block.replace(/[^\n]/g, " "));
  for (const match of prose.matchAll(/(`+)([^`]+?)\1/g)) {
    tokens.push({ token: match[2]!.replace(/\s+/g, " ").trim(), line: lineAt(match.index), fenced: false });
  }
  return tokens.sort((a, b) => a.line - b.line);
}

/** The repository's files and folders, as paths relative to it, and the names of its source files. */
export interface RepoFiles {
  /** Files and folders, folders without a trailing `/`. */
  paths: Set<string>;
  /** Base names of the files under src/, scripts/ and test/. */
  sourceNames: Set<string>;
  /** Top-level entries of the repository, such as `src` and `.ci`. */
  topLevel: Set<string>;
}

const sourceNamePattern = /^[\w.-]+\.(?:ts|mjs|js|sh|py)$/;
const pathPattern = /^\.?[\w-]+(?:\/[\w.*-]+)*\/?$/;
const memberPattern = /^([A-Z][\w$]*)\.(#?[A-Za-z_$][\w$]*)(?:\(\))?$/;
const lowerMemberPattern = /^[a-z][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?:\(\))?$/;
const camelPattern = /^[a-z][a-z0-9]*[A-Z][\w$]*(?:\(\))?$/;
const privatePattern = /^#[A-Za-z_$][\w$]*(?:\(\))?$/;
const pascalPattern = /^[A-Z][a-z0-9]+[A-Z][\w$]*$/;

/** Whether `word` is a path relative to the repository, its first part one of its top-level entries. */
function isRepoPath(word: string, files: RepoFiles): boolean {
  return word.includes("/") && pathPattern.test(word) && files.topLevel.has(word.split("/")[0]!);
}

function pathMiss(path: string, files: RepoFiles): string | null {
  const escaped = path.replace(/\/$/, "").replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*");
  const pattern = new RegExp(`^${escaped}$`);
  return [...files.paths].some((p) => pattern.test(p)) ? null : `no file or folder ${path} in the repository`;
}

/** The paths relative to the repository among the words of a command. */
function pathsIn(command: string, files: RepoFiles): string[] {
  const words = command.split(/[\s=]+/).map((word) => word.replace(/[,;:)\]]+$/, ""));
  return words.filter((word) => isRepoPath(word, files));
}

function isDeclared(decls: Declarations, name: string): boolean {
  return decls.names.has(name) || decls.strings.has(name) || name in foreignNames;
}

/** What is wrong with `token`, or null when it is right or not a name this test checks. */
export function missOf(token: string, decls: Declarations, files: RepoFiles, fenced = false): string | null {
  if (fenced || /\s/.test(token)) {
    const misses = pathsIn(token, files).map((path) => pathMiss(path, files));
    return misses.filter((miss) => miss !== null).join("; ") || null;
  }
  const bare = token.replace(/\(\)$/, "");
  if (isRepoPath(token, files)) return pathMiss(token, files);
  if (!token.includes("/") && sourceNamePattern.test(token)) {
    return files.sourceNames.has(token) ? null : "no file of that name under src/, scripts/ or test/";
  }
  const member = memberPattern.exec(token);
  if (member !== null) {
    const [, owner, name] = member as unknown as [string, string, string];
    if (owner in foreignOwners) return null;
    if (!decls.members.has(owner) && !decls.names.has(owner)) {
      return `no class, interface or object ${owner} is declared`;
    }
    return declaresMember(decls, owner, name) ? null : `${owner} declares no member ${name}`;
  }
  if (lowerMemberPattern.test(token)) {
    const parts = bare.split(".").slice(1).filter((part) => camelPattern.test(part));
    const missing = parts.filter((part) => !isDeclared(decls, part));
    return missing.length === 0 ? null : `nothing named ${missing.join(", ")} is declared`;
  }
  if (camelPattern.test(token) || privatePattern.test(token)) {
    return isDeclared(decls, bare) ? null : "nothing of that name is declared";
  }
  if (pascalPattern.test(token)) {
    return isDeclared(decls, token) ? null : "no class, interface, type or value of that name";
  }
  return null;
}

/** Every miss of the docs, as `doc:line `token`: why`. */
export function docMisses(docs: Map<string, string>, decls: Declarations, files: RepoFiles): string[] {
  const misses: string[] = [];
  for (const [doc, text] of docs) {
    for (const { token, line, fenced } of docTokens(text)) {
      const miss = missOf(token, decls, files, fenced);
      if (miss !== null) misses.push(`${doc}:${line} \`${token}\`: ${miss}`);
    }
  }
  return misses;
}

/** Files and folders under `dir`, relative to the repository, folders ending with `/`. */
function walk(dir: string): string[] {
  const skipped = new Set(["node_modules", ".git", ".tap", "data", "tmp"]);
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skipped.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(`${relative(root, path)}/`, ...walk(path));
    else if (entry.isFile()) found.push(relative(root, path));
  }
  return found;
}

function repoFiles(): RepoFiles {
  const paths = walk(root);
  const sources = paths.filter((path) => /^(src|scripts|test)\/.*[^/]$/.test(path));
  return {
    paths: new Set(paths.map((path) => path.replace(/\/$/, ""))),
    sourceNames: new Set(sources.map((path) => path.split("/").at(-1)!)),
    topLevel: new Set(readdirSync(root)),
  };
}

function codeDeclarations(): Declarations {
  const files = new Map<string, string>();
  for (const path of walk(root)) {
    if (/^(src|scripts|test\/helpers)\/.*\.(ts|mjs|js)$/.test(path)) {
      files.set(path, readFileSync(join(root, path), "utf8"));
    }
  }
  return declarationsOf(files);
}

function referenceDocs(): Map<string, string> {
  const docs = new Map<string, string>();
  for (const name of readdirSync(join(root, "docs")).filter((n) => n.endsWith(".md")).sort()) {
    docs.set(`docs/${name}`, readFileSync(join(root, "docs", name), "utf8"));
  }
  docs.set("README.md", readFileSync(join(root, "README.md"), "utf8"));
  return docs;
}

t.test("every name the reference docs put in backticks exists in the code", (t) => {
  const decls = codeDeclarations();
  const files = repoFiles();
  const docs = referenceDocs();
  // The scans found something: a check over nothing would pass whatever the docs say.
  t.ok(decls.names.size > 2000, `${decls.names.size} declared names`);
  t.ok(files.sourceNames.size > 300, `${files.sourceNames.size} source files`);
  t.ok(docs.size >= 10, `${docs.size} docs`);
  const tokens = [...docs.values()].flatMap((text) => docTokens(text));
  t.ok(tokens.length > 1000, `${tokens.length} tokens`);
  t.same(docMisses(docs, decls, files), [], "names in the docs that the code does not have");
  t.end();
});

t.test("the check finds a wrong path, file, owner, member, identifier and class, and passes right ones", (t) => {
  const source = [
    "export class Pump extends Base { #tick() {} every(): void {} constructor(readonly clockRate: number) {} }",
    "class Base { sharedStep() {} }",
    "export interface ShardView { readsInFlight: number; pollAnswer(): void }",
    'export const Cooperation = { pieceBytes: 1 } as const; const state = "PreparingRebalance";',
    "export function yieldToReactor() {}",
  ].join("\n");
  const decls = declarationsOf(new Map([["src/a.ts", source]]));
  const files: RepoFiles = {
    paths: new Set(["src", "src/a.ts", "scripts", "scripts/lib", "scripts/lib/peers/peer_load_nats.ts"]),
    sourceNames: new Set(["a.ts", "peer_load_nats.ts"]),
    topLevel: new Set(["src", "scripts", "docs"]),
  };
  const doc = [
    "Right: `src/a.ts`, `a.ts`, `scripts/lib/peers/peer_load_*`, `src/`, `Pump.#tick`, `Pump.every()`, `Pump.clockRate`,",
    "`Pump.sharedStep`, `ShardView.pollAnswer`, `Cooperation.pieceBytes`, `yieldToReactor()`, `readsInFlight`,",
    "`Deno.serve`, `Pump`, `PreparingRebalance`, `pump.clockRate`, `fsync_interval`, `deno task bench:pump`.",
    "Wrong: `src/b.ts`, `b.ts`, `Pump.#apply`, `GatedDisk.read`, `writeIndex`, `GatedDisk`, `#drain`,",
    "```sh",
    "deno run scripts/nothing.ts `notAName` --json src/a.ts",
    "```",
    "and `pump.missingField`, `deno run --allow-all scripts/lib/gone.ts --dir src/`.",
  ].join("\n");
  t.same(docMisses(new Map([["docs/X.md", doc]]), decls, files), [
    "docs/X.md:4 `src/b.ts`: no file or folder src/b.ts in the repository",
    "docs/X.md:4 `b.ts`: no file of that name under src/, scripts/ or test/",
    "docs/X.md:4 `Pump.#apply`: Pump declares no member #apply",
    "docs/X.md:4 `GatedDisk.read`: no class, interface or object GatedDisk is declared",
    "docs/X.md:4 `writeIndex`: nothing of that name is declared",
    "docs/X.md:4 `GatedDisk`: no class, interface, type or value of that name",
    "docs/X.md:4 `#drain`: nothing of that name is declared",
    "docs/X.md:6 `scripts/nothing.ts`: no file or folder scripts/nothing.ts in the repository",
    "docs/X.md:8 `pump.missingField`: nothing named missingField is declared",
    "docs/X.md:8 `deno run --allow-all scripts/lib/gone.ts --dir src/`: no file or folder scripts/lib/gone.ts in the repository",
  ]);
  t.end();
});
