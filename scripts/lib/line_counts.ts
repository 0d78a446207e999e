import ts from "typescript";

/**
 * Line counts of TypeScript sources, for the size limits on files and functions.
 *
 * A file's length is its number of lines, as `wc -l` counts them (a last line without a newline
 * counts too).
 *
 * A function's length is the number of lines its text spans, from the line where it starts (after
 * its doc comment) to the line of its end, both included. What counts as a function: a function
 * declaration or expression, an arrow function, a method, a constructor, a getter or a setter.
 * Only the outermost ones are measured: a function inside another (a closure, an arrow passed to a
 * call, a method of a class declared inside it) counts toward the one that holds it and is not
 * listed on its own. A class is not a function; its methods are measured one by one, and an arrow
 * function in a class property counts as a function of its own.
 */

/** One outermost function of a source: where it starts, what to call it, and its length. */
export interface FunctionLength {
  /** `Class.method`, the function's or the variable's or the property's name, or `<anonymous>`. */
  name: string;
  /** Line where the function starts, from 1. */
  line: number;
  lines: number;
}

/** The number of lines of `text`, as `wc -l` counts them, plus a last line without a newline. */
export function fileLineCount(text: string): number {
  if (text === "") return 0;
  let newlines = 0;
  for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) newlines++;
  return text.endsWith("\n") ? newlines : newlines + 1;
}

/** The outermost functions of a TypeScript source, in the order they appear. */
export function functionLengths(text: string, fileName = "source.ts"): FunctionLength[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (!isFunctionLike(node)) {
      ts.forEachChild(node, visit);
      return;
    }
    // Not visited further: whatever it holds counts toward it.
    const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
    const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
    found.push({ name: nameOf(node), line: start + 1, lines: end - start + 1 });
  };
  visit(source);
  return found;
}

/** What is over a limit of `linesMax` lines: longer than it, not as long as it. */
export function longerThan<T extends { lines: number }>(measured: readonly T[], linesMax: number): T[] {
  return measured.filter((item) => item.lines > linesMax);
}

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.FunctionExpression
  | ts.ArrowFunction
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration;

/** A function with a body: overload signatures and interface members have none and are not counted. */
function isFunctionLike(node: ts.Node): node is FunctionNode {
  const kind = ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node);
  return kind && node.body !== undefined;
}

function nameOf(node: FunctionNode): string {
  const own = ts.isConstructorDeclaration(node) ? "constructor" : textOf(node.name);
  const holder = node.parent;
  if (ts.isClassLike(holder)) return `${textOf(holder.name) ?? "<class>"}.${own ?? "<anonymous>"}`;
  if (own !== undefined) return own;
  // An unnamed function takes the name it is given: a variable's, a property's, a class field's.
  if (
    ts.isVariableDeclaration(holder) || ts.isPropertyAssignment(holder) || ts.isPropertyDeclaration(holder)
  ) {
    const name = textOf(holder.name);
    if (name !== undefined) {
      return ts.isPropertyDeclaration(holder) && ts.isClassLike(holder.parent)
        ? `${textOf(holder.parent.name) ?? "<class>"}.${name}`
        : name;
    }
  }
  return "<anonymous>";
}

function textOf(name: ts.Node | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return name.getText();
}
