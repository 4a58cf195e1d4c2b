//! The code pipeline: what a model sends to `execute`, and the body the sandbox runs.

use capabilities_core::code::{DEFAULT_MAX_BYTES, prepare};
use expect_test::{Expect, expect};
use proptest::prelude::*;

/// Shows the body, the notices and the line map (`body line→original line`), or the error.
fn check(source: &str, expect: Expect) {
    expect.assert_eq(&show(source, DEFAULT_MAX_BYTES));
}

fn show(source: &str, max_bytes: usize) -> String {
    match prepare(source, max_bytes) {
        Ok(prepared) => {
            let mut out = prepared.body.clone();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("--\n");
            for notice in &prepared.notices {
                out.push_str(&format!("notice: {notice}\n"));
            }
            let lines: Vec<String> = (1..=prepared.lines.len() as u32)
                .map(|line| format!("{line}→{}", prepared.original_line(line).unwrap_or(0)))
                .collect();
            out.push_str(&format!("lines: {}\n", lines.join(" ")));
            out
        }
        Err(error) => format!("error {}: {error}\nhint: {}\n", error.kind.as_str(), error.hint),
    }
}

#[test]
fn plain_javascript_runs_as_sent() {
    check(
        "const issues = await github.searchIssues({ q: \"is:open\" });\nreturn issues.items.length;",
        expect![[r#"
            const issues = await github.searchIssues({ q: "is:open" });
            return issues.items.length;
            --
            lines: 1→1 2→2
        "#]],
    );
    check(
        "// nothing to return\nawait slack.postMessage({ channel: \"#eng\", text: \"hi\" });\nx = 1\n",
        expect![[r##"
            // nothing to return
            await slack.postMessage({ channel: "#eng", text: "hi" });
            x = 1
            --
            lines: 1→1 2→2 3→3
        "##]],
    );
    check(
        "if (ready) {\n  return 1;\n}\nawait later();",
        expect![[r#"
            if (ready) {
              return 1;
            }
            await later();
            --
            lines: 1→1 2→2 3→3 4→4
        "#]],
    );
}

#[test]
fn final_expression_is_returned() {
    check(
        "const a = await github.getMe({});\na.login",
        expect![[r#"
            const a = await github.getMe({});
            return a.login
            --
            notice: returned the value of the final expression (line 2)
            lines: 1→1 2→2
        "#]],
    );
    check(
        "await github.searchIssues({\n  q: \"bug\",\n});\nfunction unused() {}\n",
        expect![[r#"
            return await github.searchIssues({
              q: "bug",
            });
            function unused() {}
            --
            notice: returned the value of the final expression (line 1)
            lines: 1→1 2→2 3→3 4→4
        "#]],
    );
    // Effects are not returned.
    check(
        "let n = 0;\nn += 1",
        expect![[r#"
            let n = 0;
            n += 1
            --
            lines: 1→1 2→2
        "#]],
    );
    check(
        "console.log(\"done\")",
        expect![[r#"
            console.log("done")
            --
            lines: 1→1
        "#]],
    );
    check(
        "({ a: 1 })",
        expect![[r#"
            return ({ a: 1 })
            --
            notice: returned the value of the final expression (line 1)
            lines: 1→1
        "#]],
    );
}

#[test]
fn export_default_is_unwrapped() {
    check(
        "const total = 3;\nexport default { total };",
        expect![[r#"
            const total = 3;
            return { total };
            --
            notice: unwrapped `export default` and returned its value
            lines: 1→1 2→2
        "#]],
    );
    check(
        "export default async function main() {\n  return await github.getMe({});\n}\n",
        expect![[r#"
            async function main() {
              return await github.getMe({});
            }
            return await main();
            --
            notice: unwrapped `export default`
            notice: called the exported function `main` and returned its result
            lines: 1→1 2→2 3→3 4→1
        "#]],
    );
    check(
        "export default async () => {\n  return 1;\n};",
        expect![[r#"
            return await (async () => {
              return 1;
            })();
            --
            notice: unwrapped `export default`
            notice: called the exported function and returned its result
            lines: 1→1 2→2 3→3
        "#]],
    );
    check(
        "export default async function () {\n  return helper();\n}\nfunction helper() { return 2 }\nconst x = 1;",
        expect![[r#"
            const __entry = (async function () {
              return helper();
            });
            function helper() { return 2 }
            const x = 1;
            return await __entry();
            --
            notice: unwrapped `export default`
            notice: called the exported function and returned its result
            lines: 1→1 2→2 3→3 4→4 5→5 6→1
        "#]],
    );
    check(
        "export const a = 1;\nexport function b() { return a }\nexport { a as c };\nb()",
        expect![[r#"
            const a = 1;
            function b() { return a }

            return b()
            --
            notice: dropped `export`: the code is a function body, not a module
            notice: returned the value of the final expression (line 4)
            lines: 1→1 2→2 3→3 4→4
        "#]],
    );
}

#[test]
fn lone_function_is_called() {
    check(
        "async function main() {\n  const me = await github.getMe({});\n  return me.login;\n}",
        expect![[r#"
            async function main() {
              const me = await github.getMe({});
              return me.login;
            }
            return await main();
            --
            notice: called the lone function `main` and returned its result
            lines: 1→1 2→2 3→3 4→4 5→1
        "#]],
    );
    check(
        "const run = async () => {\n  return 1;\n};\n",
        expect![[r#"
            const run = async () => {
              return 1;
            };
            return await run();
            --
            notice: called the lone function `run` and returned its result
            lines: 1→1 2→2 3→3 4→1
        "#]],
    );
    check(
        "const run = async (): Promise<number> => {\n  const n: number = await count();\n  return n;\n};",
        expect![[r#"
            const run = async () => {
            	const n = await count();
            	return n;
            };
            return await run();
            --
            notice: called the lone function `run` and returned its result
            notice: removed TypeScript type annotations
            lines: 1→1 2→2 3→3 4→4 5→1
        "#]],
    );
    check(
        "async () => {\n  return 1;\n}",
        expect![[r#"
            return await (async () => {
              return 1;
            })()
            --
            notice: called the function expression and returned its result
            lines: 1→1 2→2 3→3
        "#]],
    );
    // Helpers it calls are not entry points; `main` wins among several.
    check(
        "const limit = 3;\nfunction fmt(i) { return i.title }\nasync function go() { return (await list()).map(fmt) }",
        expect![[r#"
            const limit = 3;
            function fmt(i) { return i.title }
            async function go() { return (await list()).map(fmt) }
            return await go();
            --
            notice: called the lone function `go` and returned its result
            lines: 1→1 2→2 3→3 4→3
        "#]],
    );
    check(
        "function a() {}\nfunction main() { return 1 }",
        expect![[r#"
            function a() {}
            function main() { return 1 }
            return await main();
            --
            notice: called the lone function `main` and returned its result
            lines: 1→1 2→2 3→2
        "#]],
    );
    // Already called: the call is the final expression.
    check(
        "async function main() { return 1 }\nmain()",
        expect![[r#"
            async function main() { return 1 }
            return main()
            --
            notice: returned the value of the final expression (line 2)
            lines: 1→1 2→2
        "#]],
    );
    // Recursion is not a call from outside.
    check(
        "function fact(n = 5) { return n <= 1 ? 1 : n * fact(n - 1) }",
        expect![[r#"
            function fact(n = 5) { return n <= 1 ? 1 : n * fact(n - 1) }
            return await fact();
            --
            notice: called the lone function `fact` and returned its result
            lines: 1→1 2→1
        "#]],
    );
    // Two uncalled functions, neither `main`: nothing to choose.
    check(
        "function a() {}\nfunction b() {}",
        expect![[r#"
            function a() {}
            function b() {}
            --
            lines: 1→1 2→2
        "#]],
    );
    // A program that does work at the top level keeps its own shape.
    check(
        "await setup();\nfunction helper() {}\nconsole.log(1)",
        expect![[r#"
            await setup();
            function helper() {}
            console.log(1)
            --
            lines: 1→1 2→2 3→3
        "#]],
    );
}

#[test]
fn top_level_return_is_left_alone() {
    check(
        "const x = await f();\nif (!x) return null;\nx.value",
        expect![[r#"
            const x = await f();
            if (!x) return null;
            x.value
            --
            lines: 1→1 2→2 3→3
        "#]],
    );
    check(
        "function main() { return 1 }\nreturn 2;",
        expect![[r#"
            function main() { return 1 }
            return 2;
            --
            lines: 1→1 2→2
        "#]],
    );
}

#[test]
fn fenced_blocks_give_up_their_body() {
    check(
        "```ts\nconst n: number = 1;\nn + 1\n```",
        expect![[r#"
            const n = 1;
            return n + 1;
            --
            notice: took the code from the ```ts fenced block
            notice: returned the value of the final expression (line 3)
            notice: removed TypeScript type annotations
            lines: 1→2 2→3
        "#]],
    );
    check(
        "Sure! Here is the code:\n\n```javascript\nconst r = await github.getMe({});\nreturn r;\n```\n\nIt returns your profile.",
        expect![[r#"
            const r = await github.getMe({});
            return r;
            --
            notice: took the code from the ```javascript fenced block and dropped the text around it
            lines: 1→4 2→5
        "#]],
    );
    // A fence inside a comment is code, not Markdown.
    check(
        "/*\n```js\nexample()\n```\n*/\nreturn 1;",
        expect![[r#"
            /*
            ```js
            example()
            ```
            */
            return 1;
            --
            lines: 1→1 2→2 3→3 4→4 5→5 6→6
        "#]],
    );
    // Prose that happens to parse (a label, then backticks) still gives way to the block.
    check(
        "Here:\n```ts\nreturn 1\n```",
        expect![[r#"
            return 1
            --
            notice: took the code from the ```ts fenced block and dropped the text around it
            lines: 1→3
        "#]],
    );
    check(
        "```python\nprint(1)\n```",
        expect![[r#"
            error language: the code is in a ```python block, and execute runs JavaScript (line 1, column 1)
            hint: send JavaScript; TypeScript annotations are allowed and removed
        "#]],
    );
    check(
        "```ts\n\n```",
        expect![[r#"
            error empty: the fenced block is empty (line 2, column 1)
            hint: send statements to run, ending with `return <value>`
        "#]],
    );
}

#[test]
fn syntax_errors_point_at_the_original_text() {
    check(
        "const a = 1;\nconst b = (a;\nreturn b;",
        expect![[r#"
            error syntax: syntax error: expected `,` or `)` but found `;` (line 2, column 13)
            hint: execute takes the body of an async function: statements, `await`, and a final `return`
        "#]],
    );
    // Inside a fenced block, lines count from the top of the message.
    check(
        "Try this:\n```ts\nconst a = 1;\nconst b = (a;\n```",
        expect![[r#"
            error syntax: syntax error: expected `,` or `)` but found `;` (line 4, column 13)
            hint: execute takes the body of an async function: statements, `await`, and a final `return`
        "#]],
    );
    check(
        "let x = 1;\nlet x = 2;",
        expect![[r#"
            error syntax: syntax error: identifier `x` has already been declared (line 2, column 5)
            hint: execute takes the body of an async function: statements, `await`, and a final `return`
        "#]],
    );
    check(
        "export default async function main() {}\nexport default async () => 5;",
        expect![[r#"
            error syntax: syntax error: more than one `export default` (line 2, column 1)
            hint: keep one `export default`, or end the code with `return <value>`
        "#]],
    );
    check(
        "const s = \"héllo\"; ]",
        expect![[r#"
            error syntax: syntax error: unexpected token (line 1, column 20)
            hint: execute takes the body of an async function: statements, `await`, and a final `return`
        "#]],
    );
    check(
        "function f() { await x }",
        expect![[r#"
            error syntax: syntax error: `await` is only allowed within async functions and at the top levels of modules (line 1, column 16)
            hint: either remove this `await` or add the `async` keyword to the enclosing function
        "#]],
    );
}

#[test]
fn modules_are_refused() {
    check(
        "import { Octokit } from \"@octokit/rest\";\nreturn 1;",
        expect![[r#"
            error import: `import` is not available: the code is the body of one async function, not a module (line 1, column 1)
            hint: remove the import: each source is already a global object (for example `await github.searchIssues({ q })`), and `hub.search` finds more tools
        "#]],
    );
    check(
        "const x = 1;\nimport x from \"y\";",
        expect![[r#"
            error import: `import` is not available: the code is the body of one async function, not a module (line 2, column 1)
            hint: remove the import: each source is already a global object (for example `await github.searchIssues({ q })`), and `hub.search` finds more tools
        "#]],
    );
    check(
        "const fs = await import(\"node:fs\");",
        expect![[r#"
            error import: dynamic `import()` is not available in the sandbox (line 1, column 18)
            hint: remove the import: each source is already a global object (for example `await github.searchIssues({ q })`), and `hub.search` finds more tools
        "#]],
    );
    check(
        "return import.meta.url",
        expect![[r#"
            error import: `import.meta` is not available: the code is not a module (line 1, column 8)
            hint: remove the import: each source is already a global object (for example `await github.searchIssues({ q })`), and `hub.search` finds more tools
        "#]],
    );
    check(
        "export * from \"x\";",
        expect![[r#"
            error import: `export … from` is not available: there are no modules (line 1, column 1)
            hint: remove the import: each source is already a global object (for example `await github.searchIssues({ q })`), and `hub.search` finds more tools
        "#]],
    );
    // Type-only imports vanish with the types.
    check(
        "import type { Issue } from \"github\";\nconst i: Issue = await github.getIssue({ n: 1 });\nreturn i;",
        expect![[r#"
            const i = await github.getIssue({ n: 1 });
            return i;
            --
            notice: removed TypeScript type annotations
            lines: 1→2 2→3
        "#]],
    );
}

#[test]
fn typescript_is_stripped() {
    check(
        "interface Row { id: number; title: string }\nconst rows = (await db.query({ sql: \"select 1\" })) as Row[];\nconst first = rows[0]!;\nreturn first satisfies Row;",
        expect![[r#"
            const rows = await db.query({ sql: "select 1" });
            const first = rows[0];
            return first;
            --
            notice: removed TypeScript type annotations
            lines: 1→2 2→3 3→4
        "#]],
    );
    check(
        "function pick<T>(items: T[], n: number): T[] {\n  return items.slice(0, n);\n}\nreturn pick<string>([\"a\", \"b\"], 1);",
        expect![[r#"
            function pick(items, n) {
            	return items.slice(0, n);
            }
            return pick(["a", "b"], 1);
            --
            notice: removed TypeScript type annotations
            lines: 1→1 2→2 3→3 4→4
        "#]],
    );
    check(
        "enum Level { Low, High }\nconst l: Level = Level.High;\nl",
        expect![[r#"
            var Level = function(Level) {
            	Level[Level["Low"] = 0] = "Low";
            	Level[Level["High"] = 1] = "High";
            	return Level;
            }(Level || {});
            const l = Level.High;
            return l;
            --
            notice: returned the value of the final expression (line 3)
            notice: removed TypeScript type annotations
            lines: 1→1 2→1 3→1 4→1 5→1 6→2 7→3
        "#]],
    );
    // `f<T>(x)` is a generic call in TypeScript, a comparison in JavaScript: TypeScript wins.
    check(
        "return f<T>(x)",
        expect![[r#"
            return f(x);
            --
            notice: removed TypeScript type annotations
            lines: 1→1
        "#]],
    );
    // Syntax without a type node of its own still counts as TypeScript.
    check(
        "class A { constructor(private x?) {} get() { return this.x } }\nreturn new A(1).get()",
        expect![[r#"
            class A {
            	x;
            	constructor(x) {
            		this.x = x;
            	}
            	get() {
            		return this.x;
            	}
            }
            return new A(1).get();
            --
            notice: removed TypeScript type annotations
            lines: 1→1 2→1 3→1 4→1 5→1 6→1 7→1 8→1 9→1 10→2
        "#]],
    );
}

#[test]
fn rewrites_combine() {
    check(
        "Here:\n```typescript\nimport type { Me } from \"github\";\n\nexport default async function main(): Promise<string> {\n  const me: Me = await github.getMe({});\n  return me.login;\n}\n```\n",
        expect![[r#"
            async function main() {
            	const me = await github.getMe({});
            	return me.login;
            }
            return await main();
            --
            notice: took the code from the ```typescript fenced block and dropped the text around it
            notice: unwrapped `export default`
            notice: called the exported function `main` and returned its result
            notice: removed TypeScript type annotations
            lines: 1→5 2→6 3→7 4→8 5→5
        "#]],
    );
    check(
        "```ts\nexport const n: number = 2;\nn * 21\n```",
        expect![[r#"
            const n = 2;
            return n * 21;
            --
            notice: took the code from the ```ts fenced block
            notice: dropped `export`: the code is a function body, not a module
            notice: returned the value of the final expression (line 3)
            notice: removed TypeScript type annotations
            lines: 1→2 2→3
        "#]],
    );
}

#[test]
fn sizes_and_emptiness() {
    let at_limit = format!("return 1;{}", " ".repeat(DEFAULT_MAX_BYTES - 9));
    assert_eq!(at_limit.len(), DEFAULT_MAX_BYTES);
    assert!(prepare(&at_limit, DEFAULT_MAX_BYTES).is_ok());
    let over = format!("{at_limit} ");
    expect![[r#"
        error too_large: the code is 65537 bytes, over the limit of 65536
        hint: split the work over several `execute` calls, and keep large data in tool results instead of the code
    "#]]
    .assert_eq(&show(&over, DEFAULT_MAX_BYTES));
    check(
        "  \n\t",
        expect![[r#"
            error empty: the code is empty
            hint: send statements to run, ending with `return <value>`
        "#]],
    );
    check(
        "// todo\n/* later */",
        expect![[r#"
            error empty: the code has no statements, only comments
            hint: send statements to run, ending with `return <value>`
        "#]],
    );
}

#[test]
fn deep_nesting_is_refused_before_parsing() {
    let deep = format!("return {}1{};", "[".repeat(2_000), "]".repeat(2_000));
    check(
        &deep,
        expect![[r#"
            error too_deep: the code nests more than 512 levels deep (line 1, column 264)
            hint: split long expressions and deeply nested calls into statements with intermediate variables
        "#]],
    );
    let chain = format!("return 1{};", " + 1".repeat(10_000));
    assert_eq!(prepare(&chain, DEFAULT_MAX_BYTES).unwrap_err().kind.as_str(), "too_deep");
    // Long but flat code is fine.
    let flat = "x = x + 1;\n".repeat(5_000);
    assert!(prepare(&format!("let x = 0;\n{flat}return x;"), DEFAULT_MAX_BYTES).is_ok());
}

/// Statements in the shapes models send, JavaScript and TypeScript, for combining.
const SNIPPETS: &[&str] = &[
    "const a = 1;",
    "let b: number = 2;",
    "a + b",
    "await github.getMe({})",
    "export default async function main() { return a; }",
    "export default { a };",
    "export const c = 3;",
    "export { a };",
    "export {};",
    "import type { T } from 'x';",
    "function f(x?: number) { return x; }",
    "class K { private p = 1; constructor(public q: number) {} }",
    "enum E { X, Y }",
    "interface I { a: string }",
    "type U = string | number;",
    "async () => { return 1; }",
    "return a;",
    "if (a) { return b; }",
    "const g = <T,>(x: T) => x;",
    "g<string>('s')",
    "a as unknown as number",
    "a!",
    "console.log(a)",
    "main()",
    "async function main() { return 2; }",
    "function h() {}",
    "const run = async () => 1;",
    "export default main;",
    "export default async () => 5;",
    "export default class {}",
    "namespace N { export const z = 1; }",
    "declare const d: number;",
    "abstract class Q { abstract m(): void }",
    "let v!: string;",
    "function over(a: string): void;\nfunction over(a: any) {}",
    "x = 5",
    "// comment",
    "/* block */",
    "const s = `t ${a}`;",
    "for (const i of [1, 2]) { a += i; }",
];

/// Ways to nest an expression: text before and after the inner expression.
const LAYERS: &[(&str, &str)] = &[
    ("(", ")"),
    ("[", "]"),
    ("{a:", "}"),
    ("f(", ")"),
    ("!", ""),
    ("-", ""),
    ("a+", ""),
    ("a.b+", ""),
    ("2**", ""),
    ("a?b:", ""),
    ("x=>", ""),
    ("async x=>", ""),
    ("typeof ", ""),
    ("await ", ""),
    ("new ", ""),
    ("`${", "}`"),
    ("(()=>{return ", "})()"),
    ("function(){return ", "}"),
    ("a=", ""),
    ("...", ""),
    ("<T>", ""),
    ("(a as ", ")"),
    ("(", "!)"),
    ("a,", ""),
    ("\n", ""),
    ("a\n+", ""),
    ("a\n.b+", ""),
    ("", "()"),
    ("", ".c"),
    ("", "[0]"),
    ("", "`t`"),
];

/// True when `body` parses as JavaScript, the way the sandbox will read it.
fn parses_as_javascript(body: &str) -> bool {
    use oxc::allocator::Allocator;
    use oxc::parser::{ParseOptions, Parser};
    use oxc::span::SourceType;
    let allocator = Allocator::default();
    let options = ParseOptions { allow_return_outside_function: true, ..ParseOptions::default() };
    let parsed = Parser::new(&allocator, body, SourceType::mjs()).with_options(options).parse();
    !parsed.diagnostics.has_errors() && !parsed.panicked
}

/// For each way to nest, the deepest code the limit lets through still goes through the whole
/// pipeline on a test thread's stack.
#[test]
fn every_kind_of_nesting_at_its_limit_prepares() {
    let nest =
        |(before, after): (&str, &str), n: usize| format!("return {}x{};", before.repeat(n), after.repeat(n));
    let mut deepest = Vec::new();
    for &layer in LAYERS {
        let (mut low, mut high) = (0usize, 4_000);
        while low < high {
            let mid = (low + high).div_ceil(2);
            let refused = prepare(&nest(layer, mid), DEFAULT_MAX_BYTES)
                .is_err_and(|error| error.kind.as_str() == "too_deep");
            if refused { high = mid - 1 } else { low = mid }
        }
        deepest.push(format!("{:?}{:?} {low}", layer.0, layer.1));
    }
    expect![[r#"
        "("")" 256
        "[""]" 256
        "{a:""}" 170
        "f("")" 256
        "!""" 512
        "-""" 1024
        "a+""" 512
        "a.b+""" 256
        "2**""" 512
        "a?b:""" 256
        "x=>""" 512
        "async x=>""" 512
        "typeof """ 512
        "await """ 512
        "new """ 512
        "`${""}`" 256
        "(()=>{return ""})()" 85
        "function(){return ""}" 170
        "a=""" 512
        "...""" 512
        "<T>""" 256
        "(a as "")" 170
        "(""!)" 255
        "a,""" 4000
        "\n""" 4000
        "a\n+""" 512
        "a\n.b+""" 256
        """()" 511
        """.c" 512
        """[0]" 511
        """`t`" 512"#]]
    .assert_eq(&deepest.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever shape the code takes, a prepared body is JavaScript.
    #[test]
    fn prepared_bodies_are_javascript(
        picks in proptest::collection::vec(proptest::sample::select(SNIPPETS), 1..6),
        fenced in any::<bool>(),
    ) {
        let code = picks.join("\n");
        let source = if fenced { format!("Here:\n```ts\n{code}\n```\n") } else { code };
        if let Ok(prepared) = prepare(&source, DEFAULT_MAX_BYTES) {
            prop_assert!(parses_as_javascript(&prepared.body), "{source}\n=>\n{}", prepared.body);
            let lines = source.lines().count() as u32;
            for line in 1..=prepared.lines.len() as u32 {
                let original = prepared.original_line(line).unwrap();
                prop_assert!(original >= 1 && original <= lines);
            }
        }
    }

    /// Nesting of every kind, near and past the limit, is refused or prepared, never a stack
    /// overflow.
    #[test]
    fn deep_nesting_never_overflows(
        layers in proptest::collection::vec(proptest::sample::select(LAYERS), 1..40),
        repeat in 1usize..400,
    ) {
        let mut open = String::new();
        let mut close = String::new();
        for _ in 0..repeat {
            for (before, after) in &layers {
                open.push_str(before);
                close.insert_str(0, after);
            }
        }
        let source = format!("return {open}1{close};");
        if source.len() <= DEFAULT_MAX_BYTES {
            let _ = prepare(&source, DEFAULT_MAX_BYTES);
        }
    }

    #[test]
    fn never_panics_on_any_text(source in any::<String>()) {
        let _ = prepare(&source, DEFAULT_MAX_BYTES);
    }

    #[test]
    fn never_panics_on_code_like_text(
        source in proptest::string::string_regex(
            "[ \n(){}\\[\\];:,.=+*/<>!?`'\"$a-z0-9]{0,200}"
        ).unwrap()
    ) {
        let _ = prepare(&source, DEFAULT_MAX_BYTES);
    }

    #[test]
    fn never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let source = String::from_utf8_lossy(&bytes);
        let _ = prepare(&source, DEFAULT_MAX_BYTES);
    }

    #[test]
    fn errors_point_inside_the_text(source in "[a-z(){};= \n]{1,80}") {
        if let Err(error) = prepare(&source, DEFAULT_MAX_BYTES) {
            let lines = source.split('\n').count() as u32;
            prop_assert!(error.line.is_none_or(|line| line >= 1 && line <= lines));
        }
    }

    #[test]
    fn line_map_stays_within_the_text(source in "(const [a-z] = [0-9];\n|[a-z]\\(\\)\n|function [a-z]\\(\\) \\{\\}\n){1,8}") {
        if let Ok(prepared) = prepare(&source, DEFAULT_MAX_BYTES) {
            let lines = source.lines().count() as u32;
            for line in 1..=prepared.lines.len() as u32 {
                let original = prepared.original_line(line).unwrap();
                prop_assert!(original >= 1 && original <= lines);
            }
        }
    }
}

#[test]
fn odd_inputs_never_panic() {
    let inputs = [
        "\u{feff}return 1",
        "#!/usr/bin/env node\nreturn 1",
        "\0",
        "```",
        "```ts",
        "``````",
        "\u{2028}return 1\u{2029}",
        "export default",
        "export default class {}",
        "export = 1",
        "export as namespace X;",
        "import x = require('y')",
        "import A = B.C; return A",
        "declare module \"x\" { }",
        "declare global { interface X {} }",
        "namespace N { export const a = 1 } N.a",
        "const enum E { A } E.A",
        "abstract class A { abstract f(): void } return 1",
        "@dec class A {} return A",
        "using x = f(); return x",
        "<T>(x: T) => x",
        "return <any>x",
        "let x!: number; x",
        "function f(this: Window) {} f",
        "a?.b!.c",
        "label: { break label; }",
        "yield 1",
        "await",
        "return",
        "}",
        "/* unterminated",
        "'unterminated",
        "`${`${`",
        "/[/]/.test('x')",
        "x\n/re/g",
        "export default function main() {} export default function other() {}",
        "export async function main() { return 1 }",
        "export default async function main() {}\nexport default async () => 5;",
    ];
    for input in inputs {
        let _ = prepare(input, DEFAULT_MAX_BYTES);
    }
}

/// Found by the `code` fuzz target: a backslash outside a string is no identifier escape, and
/// the TypeScript parse let it through, so the sandbox got a body it could not parse.
#[test]
fn fuzz_invalid_escape_outside_a_string_is_refused() {
    check(
        "\\n<<n",
        expect![[r#"
        error syntax: syntax error: invalid Unicode escape sequence (line 1)
        hint: execute takes the body of an async function: statements, `await`, and a final `return`
    "#]],
    );
    check(
        "const a\\u0062 = 1;\nreturn ab;",
        expect![[r#"
        const a\u0062 = 1;
        return ab;
        --
        lines: 1→1 2→2
    "#]],
    );
}
