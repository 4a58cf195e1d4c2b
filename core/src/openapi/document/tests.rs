//! The reading rules, one small document each: what [`read`] makes of it, or its error.

use expect_test::{Expect, expect};
use serde_json::json;

use super::*;
use crate::manifest::Annotations;

fn check(document: &str, expect: Expect) {
    let out = match read(document.as_bytes(), &ReadOptions::default()) {
        Ok(document) => render(&document),
        Err(e) => format!("error: {e}"),
    };
    expect.assert_eq(&out);
}

/// Each operation on a few lines: name, request, input, output body; then the problems.
fn render(d: &Document) -> String {
    let mut out = String::new();
    for op in &d.operations {
        let http = op.http.as_ref().expect("every operation has http");
        let mut wire = serde_json::to_value(http).unwrap();
        for key in ["method", "path"] {
            wire.as_object_mut().unwrap().remove(key);
        }
        out.push_str(&format!("{}: {} {}\n", op.name, http.method, http.path));
        if wire != json!({}) {
            out.push_str(&format!("  http: {wire}\n"));
        }
        out.push_str(&format!("  input: {}\n", op.input_schema));
        let output = op.output_schema.as_ref().expect("every operation has an output schema");
        out.push_str(&format!("  body: {}\n", output["properties"]["body"]));
        if let Some(defs) = output.get("$defs") {
            out.push_str(&format!("  body $defs: {defs}\n"));
        }
    }
    for problem in &d.problems {
        out.push_str(&format!("problem: {problem}\n"));
    }
    out
}

fn read_ok(document: &str) -> Document {
    read(document.as_bytes(), &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn error(document: &[u8], options: &ReadOptions) -> String {
    match read(document, options) {
        Ok(_) => "read".to_owned(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn versions() {
    let versions: Vec<String> = [
        r#"{"swagger": "2.0", "info": {"title": "A"}, "paths": {}}"#,
        "swagger: 2.0\ninfo: {title: A}\npaths: {}\n",
        "openapi: 3.0.3\ninfo:\n  title: A\n  description: ' The A API. '\npaths: {}\n",
        "openapi: 3.1.0\ninfo: {title: A}\n",
        "openapi: 3.2.0\ninfo: {title: A}\n",
        "openapi: 4.0.0\n",
        "openapi: '2.0'\n",
        "swagger: '1.2'\n",
        "info: {title: A}\n",
        "openapi: [3]\n",
        "- openapi: 3.0.0\n",
        "\u{feff}  {\"openapi\": \"3.0.0\"}",
        "{openapi: 3.0.0, info: {title: flow YAML}}",
    ]
    .iter()
    .map(|doc| match read(doc.as_bytes(), &ReadOptions::default()) {
        Ok(d) => format!("{} {:?} {:?}", d.version, d.title, d.description),
        Err(e) => format!("error: {e}"),
    })
    .collect();
    expect![[r#"
        [
            "2.0 \"A\" None",
            "2.0 \"A\" None",
            "3.0.3 \"A\" Some(\"The A API.\")",
            "3.1.0 \"A\" None",
            "3.2.0 \"A\" None",
            "error: OpenAPI version `4.0.0` is not read here: give an OpenAPI 3.0, 3.1 or Swagger 2.0 document",
            "error: OpenAPI version `2.0` is not read here: give an OpenAPI 3.0, 3.1 or Swagger 2.0 document",
            "error: OpenAPI version `1.2` is not read here: give an OpenAPI 3.0, 3.1 or Swagger 2.0 document",
            "error: the document has neither an `openapi` nor a `swagger` field: give an OpenAPI 3.x or Swagger 2.0 document",
            "error: `/openapi` is an array, not a version string: fix the document",
            "error: the document is an array, not an object: give an OpenAPI document (JSON or YAML)",
            "3.0.0 \"\" None",
            "3.0.0 \"flow YAML\" None",
        ]
    "#]]
    .assert_debug_eq(&versions);
}

#[test]
fn limits_and_bad_bytes() {
    let defaults = ReadOptions::default();
    // 50 MB of a document that would otherwise read.
    let mut big = br#"{"openapi": "3.0.0", "paths": {}}"#.to_vec();
    big.resize(50 * 1024 * 1024, b' ');
    // Billion laughs: nine levels of ten aliases each.
    let mut bomb =
        String::from("openapi: 3.0.0\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let deep_json = format!(r#"{{"openapi": "3.0.0", "x": {}{}}}"#, "[".repeat(200), "]".repeat(200));
    let deep_yaml = format!("openapi: 3.0.0\nx: {}{}\n", "[".repeat(200), "]".repeat(200));
    let deep_block =
        (0..70).fold(String::from("openapi: 3.0.0\n"), |doc, i| format!("{doc}{}k:\n", " ".repeat(i)));
    let many = {
        let paths: Vec<String> = (0..6).map(|i| format!(r#""/p{i}": {{"get": {{}}}}"#)).collect();
        format!(r#"{{"openapi": "3.0.0", "paths": {{{}}}}}"#, paths.join(","))
    };
    let errors = [
        error(&big, &defaults),
        error(bomb.as_bytes(), &defaults),
        error(deep_json.as_bytes(), &defaults),
        error(deep_yaml.as_bytes(), &defaults),
        error(deep_block.as_bytes(), &defaults),
        error(many.as_bytes(), &ReadOptions { max_operations: 5, ..defaults }),
        error(many.as_bytes(), &ReadOptions { max_operations: 6, ..defaults }),
        error(b"{\"openapi\": \"3.0.0\",", &defaults),
        error(b"openapi: 3.0.0\n  bad: [indent\n", &defaults),
        error(b"openapi: 3.0.0\npaths: [1]\n", &defaults),
        error(b"\xff\xfe", &defaults),
        error(b"", &defaults),
    ];
    expect![[r#"
        [
            "the document is 52428800 bytes, more than the 33554432 read: give a smaller document or raise the limit",
            "the YAML expands its aliases too far (budget breached: ScalarBytes { total_scalar_bytes: 1053417 } at line 2, column 10 (defined at line 6, column 9) (used at line 7, column 20)), as an alias bomb does: give the document without anchors and aliases",
            "the document nests deeper than 128 levels: no OpenAPI document needs that many",
            "the document nests deeper than 64 levels: no OpenAPI document needs that many",
            "the document nests deeper than 64 levels: no OpenAPI document needs that many",
            "the document has 6 operations, more than the 5 read: split the API into several sources or raise the limit",
            "read",
            "the document is not valid JSON (EOF while parsing a value at line 1 column 20): fix it, or give it as YAML",
            "the document is not valid YAML (mapping values are not allowed in this context at line 2, column 6): fix it, or give it as JSON",
            "`/paths` is an array, not an object of paths: fix the document",
            "the document is not valid YAML (input is not valid UTF-8): fix it, or give it as JSON",
            "the document is null, not an object: give an OpenAPI document (JSON or YAML)",
        ]
    "#]]
    .assert_debug_eq(&errors);
}

#[test]
fn references_that_cannot_be_followed() {
    let doc = |reference: &str| {
        format!(
            "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {{$ref: '{reference}'}}\ncomponents:\n  schemas:\n    A: {{type: string}}\n"
        )
    };
    let errors: Vec<String> = [
        "other.yaml#/components/schemas/A",
        "https://example.com/schemas.json",
        "#/components/schemas/B",
        "#/components/schemas/A",
        "#anchor",
    ]
    .iter()
    .map(|r| match read(doc(r).as_bytes(), &ReadOptions::default()) {
        Ok(d) => format!("read, problems: {:?}", d.problems),
        Err(e) => e.to_string(),
    })
    .collect();
    expect![[r#"
        [
            "`$ref` `other.yaml#/components/schemas/A` at `/paths/~1a/get/responses/200/content/application~1json/schema/$ref` points outside the document: bundle the document into one file first (for example with `redocly bundle`)",
            "`$ref` `https://example.com/schemas.json` at `/paths/~1a/get/responses/200/content/application~1json/schema/$ref` points outside the document: bundle the document into one file first (for example with `redocly bundle`)",
            "`$ref` `#/components/schemas/B` at `/paths/~1a/get/responses/200/content/application~1json/schema/$ref` points to nothing in the document: fix the reference",
            "read, problems: []",
            "read, problems: [\"`get /a`: `$ref` `#anchor` at `/paths/~1a/get/responses/200/content/application~1json/schema/$ref` names an anchor, which is not read: refer by pointer (`#/components/…`); left out\"]",
        ]
    "#]]
    .assert_debug_eq(&errors);
}

#[test]
fn an_invalid_schema_leaves_out_its_operation_only() {
    check(
        r#"
openapi: 3.0.0
paths:
  /bad:
    get:
      operationId: bad
      parameters:
        - {name: q, in: query, schema: {type: 5}}
  /worse:
    get:
      operationId: worse
      parameters:
        - {name: q, in: query, schema: {type: [string, dragon]}}
  /props:
    post:
      operationId: props
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: [a]}
  /style:
    get:
      operationId: style
      parameters:
        - {name: q, in: query, style: sideways, schema: {type: string}}
  /where:
    get:
      operationId: where
      parameters:
        - {name: q, in: querystring, schema: {type: string}}
  /good:
    get:
      operationId: good
"#,
        expect![[r#"
            good: GET /good
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {}
            problem: `bad` (GET /bad): the schema at `/paths/~1bad/get/parameters/0/schema` has `type` `5`, which is not a JSON Schema; left out
            problem: `worse` (GET /worse): the schema at `/paths/~1worse/get/parameters/0/schema` has `type` `["string","dragon"]`, which is not a JSON Schema; left out
            problem: `props` (POST /props): the schema at `/paths/~1props/post/requestBody/content/application~1json/schema` has `properties` that is an array, which is not a JSON Schema; left out
            problem: `style` (GET /style): parameter `q` has style "sideways", which is not sent here; left out
            problem: `where` (GET /where): parameter `q` is in `querystring`, which is not read; left out
        "#]],
    );
}

#[test]
fn names_words_and_hints() {
    let long = "word ".repeat(400);
    check(
        &format!(
            r#"
openapi: 3.0.0
paths:
  /pets/{{id}}:
    get:
      operationId: pets/get
      summary: Get a pet
      description: Reads one pet.
      tags: [pets, animals]
    put:
      operationId: pets/get
      summary: Same words
      description: Same words
      deprecated: true
    delete:
      description: "{long}"
    patch:
      operationId: ''
    options: {{}}
    head: {{}}
    trace: {{}}
    post: {{operationId: "patch /pets/{{id}}"}}
    x-internal: {{}}
    parameters:
      - {{name: id, in: path, schema: {{type: string}}}}
"#
        ),
        expect![[r#"
            pets/get: GET /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            put /pets/{id}: PUT /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            delete /pets/{id}: DELETE /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            patch /pets/{id}: PATCH /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            options /pets/{id}: OPTIONS /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            head /pets/{id}: HEAD /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            trace /pets/{id}: TRACE /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            post /pets/{id}: POST /pets/{id}
              http: {"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            problem: `put /pets/{id}`: operationId `pets/get` is taken by an earlier operation; named by method and path
            problem: `post /pets/{id}`: operationId `patch /pets/{id}` is taken by an earlier operation; named by method and path
        "#]],
    );
    let d = read_ok(&format!(
        "openapi: 3.0.0\npaths:\n  /a:\n    get: {{summary: Get a, description: Reads a., tags: [a, b]}}\n    put: {{summary: Same, description: Same, deprecated: true}}\n    delete: {{description: '{long}'}}\n    post: {{}}\n"
    ));
    let words: Vec<(&str, Option<&str>, usize, &Annotations)> = d
        .operations
        .iter()
        .map(|o| {
            let text = if o.description.len() > 100 { "(long)" } else { o.description.as_str() };
            (text, o.title.as_deref(), o.description.chars().count(), &o.annotations)
        })
        .collect();
    expect![[r#"
        [
            (
                "Get a\n\nReads a.\n\nTags: a, b",
                Some(
                    "Get a",
                ),
                27,
                Annotations {
                    title: None,
                    read_only_hint: Some(
                        true,
                    ),
                    destructive_hint: None,
                    idempotent_hint: None,
                    open_world_hint: None,
                },
            ),
            (
                "Same\n\nDeprecated.",
                Some(
                    "Same",
                ),
                17,
                Annotations {
                    title: None,
                    read_only_hint: None,
                    destructive_hint: None,
                    idempotent_hint: Some(
                        true,
                    ),
                    open_world_hint: None,
                },
            ),
            (
                "(long)",
                None,
                1495,
                Annotations {
                    title: None,
                    read_only_hint: None,
                    destructive_hint: None,
                    idempotent_hint: Some(
                        true,
                    ),
                    open_world_hint: None,
                },
            ),
            (
                "",
                None,
                0,
                Annotations {
                    title: None,
                    read_only_hint: None,
                    destructive_hint: None,
                    idempotent_hint: None,
                    open_world_hint: None,
                },
            ),
        ]
    "#]]
    .assert_debug_eq(&words);
    assert!(d.operations[2].description.ends_with("word…"));
}

#[test]
fn parameters_merge_collide_and_keep_their_style() {
    check(
        r##"
openapi: 3.0.3
paths:
  /items/{id}:
    parameters:
      - {name: id, in: path, description: path level, schema: {type: string}}
      - {name: limit, in: query, schema: {type: integer}}
      - $ref: '#/components/parameters/Trace'
    post:
      operationId: update
      parameters:
        - {name: limit, in: query, required: true, description: operation level, schema: {type: integer, maximum: 10}}
        - {name: id, in: query, schema: {type: string}}
        - {name: id_query, in: header, schema: {type: string}}
        - {name: Accept, in: header, schema: {type: string}}
        - {name: content-type, in: header, schema: {type: string}}
        - {name: Authorization, in: header, schema: {type: string}}
        - {name: tags, in: query, style: pipeDelimited, explode: false, schema: {type: array, items: {type: string}}}
        - {name: filter, in: query, content: {application/json: {schema: {type: object, properties: {a: {type: string}}}}}}
        - {name: session, in: cookie, deprecated: true, example: abc}
        - {name: body, in: query, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [id, name]
              properties:
                id: {type: integer}
                name: {type: string}
                limit: {type: integer}
                created: {type: string, readOnly: true}
components:
  parameters:
    Trace: {name: X-Trace, in: header, schema: {type: string}, examples: {one: {value: t-1}, two: {summary: x}}}
"##,
        expect![[r#"
            update: POST /items/{id}
              http: {"body":{"mediaType":"application/json","shape":{"kind":"fields","fields":[{"name":"id","argument":"id_body"},{"name":"name","argument":"name"},{"name":"limit","argument":"limit_body"}]},"required":true},"parameters":[{"name":"id","in":"path","argument":"id"},{"name":"limit","in":"query","argument":"limit"},{"name":"X-Trace","in":"header","argument":"X-Trace"},{"name":"id","in":"query","argument":"id_query"},{"name":"id_query","in":"header","argument":"id_query_header"},{"name":"tags","in":"query","argument":"tags","style":"pipeDelimited","explode":false},{"name":"filter","in":"query","argument":"filter"},{"name":"session","in":"cookie","argument":"session"},{"name":"body","in":"query","argument":"body"}]}
              input: {"type":"object","properties":{"id":{"type":"string","description":"path level"},"limit":{"type":"integer","maximum":10,"description":"operation level"},"X-Trace":{"type":"string","examples":["t-1"]},"id_query":{"type":"string"},"id_query_header":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"filter":{"type":"object","properties":{"a":{"type":"string"}}},"session":{"deprecated":true,"examples":["abc"]},"body":{"type":"string"},"id_body":{"type":"integer"},"name":{"type":"string"},"limit_body":{"type":"integer"}},"required":["id","limit","id_body","name"],"additionalProperties":false}
              body: {}
        "#]],
    );
}

#[test]
fn swagger_parameters_and_bodies() {
    check(
        r##"
swagger: "2.0"
consumes: [application/json]
paths:
  /pets:
    get:
      operationId: find
      parameters:
        - {name: tags, in: query, type: array, items: {type: string, collectionFormat: csv}}
        - {name: ids, in: query, type: array, collectionFormat: multi, items: {type: integer}}
        - {name: words, in: query, type: array, collectionFormat: ssv, items: {type: string}}
        - {name: limit, in: query, type: integer, minimum: 1, exclusiveMinimum: true, x-nullable: true}
    post:
      operationId: add
      parameters:
        - {name: pet, in: body, required: true, description: The pet., schema: {$ref: '#/definitions/Pet'}}
    put:
      operationId: replaceAll
      consumes: [application/xml, application/vnd.pets+json]
      parameters:
        - {name: pets, in: body, schema: {type: array, items: {$ref: '#/definitions/Pet'}}}
  /pets/{id}/photo:
    post:
      operationId: upload
      consumes: [multipart/form-data, application/x-www-form-urlencoded]
      parameters:
        - {name: id, in: path, type: integer}
        - {name: caption, in: formData, type: string}
        - {name: photo, in: formData, type: file, required: true}
    put:
      operationId: rename
      parameters:
        - {name: id, in: path, type: integer}
        - {name: name, in: formData, type: string}
    delete:
      operationId: tabs
      parameters:
        - {name: id, in: path, type: array, items: {type: string}, collectionFormat: tsv}
definitions:
  Pet:
    type: object
    required: [name]
    properties:
      name: {type: string, example: Rex}
      kind: {type: string, x-nullable: true, enum: [cat, dog]}
"##,
        expect![[r##"
            find: GET /pets
              http: {"parameters":[{"name":"tags","in":"query","argument":"tags","explode":false},{"name":"ids","in":"query","argument":"ids","style":"form","explode":true},{"name":"words","in":"query","argument":"words","style":"spaceDelimited","explode":false},{"name":"limit","in":"query","argument":"limit"}]}
              input: {"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}},"ids":{"type":"array","items":{"type":"integer"}},"words":{"type":"array","items":{"type":"string"}},"limit":{"type":["integer","null"],"exclusiveMinimum":1}},"additionalProperties":false}
              body: {}
            add: POST /pets
              http: {"body":{"mediaType":"application/json","shape":{"kind":"fields","fields":[{"name":"name","argument":"name"},{"name":"kind","argument":"kind"}]},"required":true}}
              input: {"type":"object","properties":{"name":{"type":"string","examples":["Rex"]},"kind":{"type":["string","null"],"enum":["cat","dog",null]}},"required":["name"],"additionalProperties":false}
              body: {}
            replaceAll: PUT /pets
              http: {"body":{"mediaType":"application/vnd.pets+json","shape":{"kind":"whole","argument":"body"}}}
              input: {"type":"object","properties":{"body":{"type":"array","items":{"$ref":"#/$defs/Pet"}}},"additionalProperties":false,"$defs":{"Pet":{"type":"object","required":["name"],"properties":{"name":{"type":"string","examples":["Rex"]},"kind":{"type":["string","null"],"enum":["cat","dog",null]}}}}}
              body: {}
            upload: POST /pets/{id}/photo
              http: {"body":{"mediaType":"multipart/form-data","shape":{"kind":"fields","fields":[{"name":"caption","argument":"caption"},{"name":"photo","argument":"photo"}]},"required":true},"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"integer"},"caption":{"type":"string"},"photo":{"type":"string","format":"binary"}},"required":["id","photo"],"additionalProperties":false}
              body: {}
            rename: PUT /pets/{id}/photo
              http: {"body":{"mediaType":"application/x-www-form-urlencoded","shape":{"kind":"fields","fields":[{"name":"name","argument":"name"}]}},"parameters":[{"name":"id","in":"path","argument":"id"}]}
              input: {"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"],"additionalProperties":false}
              body: {}
            problem: `tabs` (DELETE /pets/{id}/photo): parameter `id` sends its array as `tsv`, which is not sent here; left out
        "##]],
    );
}

#[test]
fn bodies_choose_a_media_type_and_a_shape() {
    check(
        r##"
openapi: 3.1.0
paths:
  /json-last:
    post:
      operationId: jsonLast
      requestBody:
        content:
          text/plain: {schema: {type: string}}
          multipart/form-data: {schema: {type: object, properties: {f: {type: string}}}}
          application/merge-patch+json: {schema: {$ref: '#/components/schemas/Patch'}}
  /form-first:
    post:
      operationId: formFirst
      requestBody:
        content:
          multipart/form-data: {schema: {type: object, properties: {file: {type: string, contentMediaType: image/png}}}}
          application/x-www-form-urlencoded: {schema: {type: object, properties: {a: {type: string}}}}
  /text:
    post:
      operationId: text
      requestBody:
        description: The note.
        required: true
        content:
          text/plain: {schema: {type: string}}
  /any:
    post:
      operationId: any
      parameters:
        - {name: body, in: query, schema: {type: string}}
      requestBody:
        content:
          application/octet-stream: {}
  /merged:
    post:
      operationId: merged
      requestBody:
        $ref: '#/components/requestBodies/Merged'
  /alternatives:
    post:
      operationId: alternatives
      requestBody:
        content:
          application/json:
            schema:
              oneOf: [{$ref: '#/components/schemas/Patch'}, {type: object, properties: {b: {type: string}}}]
  /map:
    post:
      operationId: map
      requestBody:
        content:
          application/json:
            schema: {type: object, additionalProperties: {type: string}}
components:
  requestBodies:
    Merged:
      required: true
      content:
        application/json:
          schema:
            allOf:
              - $ref: '#/components/schemas/Patch'
              - {type: object, required: [extra], properties: {extra: {type: boolean}}}
  schemas:
    Patch:
      type: object
      required: [op]
      properties:
        op: {type: string, enum: [add, remove]}
        path: {type: string}
"##,
        expect![[r##"
            jsonLast: POST /json-last
              http: {"body":{"mediaType":"application/merge-patch+json","shape":{"kind":"fields","fields":[{"name":"op","argument":"op"},{"name":"path","argument":"path"}]}}}
              input: {"type":"object","properties":{"op":{"type":"string","enum":["add","remove"]},"path":{"type":"string"}},"additionalProperties":false}
              body: {}
            formFirst: POST /form-first
              http: {"body":{"mediaType":"application/x-www-form-urlencoded","shape":{"kind":"fields","fields":[{"name":"a","argument":"a"}]}}}
              input: {"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}
              body: {}
            text: POST /text
              http: {"body":{"mediaType":"text/plain","shape":{"kind":"whole","argument":"body"},"required":true}}
              input: {"type":"object","properties":{"body":{"type":"string","description":"The note."}},"required":["body"],"additionalProperties":false}
              body: {}
            any: POST /any
              http: {"body":{"mediaType":"application/octet-stream","shape":{"kind":"whole","argument":"body_body"}},"parameters":[{"name":"body","in":"query","argument":"body"}]}
              input: {"type":"object","properties":{"body":{"type":"string"},"body_body":{}},"additionalProperties":false}
              body: {}
            merged: POST /merged
              http: {"body":{"mediaType":"application/json","shape":{"kind":"fields","fields":[{"name":"op","argument":"op"},{"name":"path","argument":"path"},{"name":"extra","argument":"extra"}]},"required":true}}
              input: {"type":"object","properties":{"op":{"type":"string","enum":["add","remove"]},"path":{"type":"string"},"extra":{"type":"boolean"}},"required":["op","extra"],"additionalProperties":false}
              body: {}
            alternatives: POST /alternatives
              http: {"body":{"mediaType":"application/json","shape":{"kind":"whole","argument":"body"}}}
              input: {"type":"object","properties":{"body":{"oneOf":[{"$ref":"#/$defs/Patch"},{"type":"object","properties":{"b":{"type":"string"}}}]}},"additionalProperties":false,"$defs":{"Patch":{"type":"object","required":["op"],"properties":{"op":{"type":"string","enum":["add","remove"]},"path":{"type":"string"}}}}}
              body: {}
            map: POST /map
              http: {"body":{"mediaType":"application/json","shape":{"kind":"whole","argument":"body"}}}
              input: {"type":"object","properties":{"body":{"type":"object","additionalProperties":{"type":"string"}}},"additionalProperties":false}
              body: {}
        "##]],
    );
}

#[test]
fn responses_and_security() {
    check(
        r##"
openapi: 3.0.0
security: [{key: []}]
paths:
  /created:
    post:
      operationId: created
      security: []
      responses:
        '201': {description: made, content: {application/json: {schema: {type: object, properties: {id: {type: integer}}}}}}
        '200': {description: ok, content: {application/json: {schema: {type: string}}}}
        default: {description: error, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
  /empty-then-schema:
    get:
      operationId: emptyThenSchema
      security: [{}]
      responses:
        204: {description: nothing}
        2XX: {description: some, content: {application/problem+xml: {schema: {type: string}}, application/json: {schema: {type: boolean}}}}
        default: {$ref: '#/components/responses/Error'}
  /only-default:
    get:
      operationId: onlyDefault
      responses:
        default: {$ref: '#/components/responses/Error'}
  /only-errors:
    get:
      operationId: onlyErrors
      responses:
        '404': {$ref: '#/components/responses/Error'}
  /text:
    get:
      operationId: text
      responses:
        '200': {description: ok, content: {text/csv: {schema: {type: string}}}}
components:
  responses:
    Error: {description: error, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
  schemas:
    Error: {type: object, properties: {message: {type: string}}}
"##,
        expect![[r##"
            created: POST /created
              http: {"authenticated":false}
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {"type":"string"}
            emptyThenSchema: GET /empty-then-schema
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {"type":"boolean"}
            onlyDefault: GET /only-default
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {"$ref":"#/$defs/Error"}
              body $defs: {"Error":{"type":"object","properties":{"message":{"type":"string"}}}}
            onlyErrors: GET /only-errors
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {}
            text: GET /text
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {"type":"string"}
        "##]],
    );
    let d = read_ok("openapi: 3.0.0\npaths:\n  /a:\n    get: {}\n");
    expect![[r#"{"type":"object","properties":{"status":{"type":"integer"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{}},"required":["status","headers","body"]}"#]]
        .assert_eq(&d.operations[0].output_schema.as_ref().unwrap().to_string());
}

#[test]
fn schemas_become_json_schema_2020_12() {
    check(
        r##"
openapi: 3.0.3
paths:
  /things:
    post:
      operationId: things
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              x-internal: true
              properties:
                x-rate: {type: integer, x-internal: yes}
                maybe: {type: string, nullable: true, example: hi}
                either: {nullable: true, description: One of two., oneOf: [{type: string}, {type: integer}]}
                pet: {$ref: '#/components/schemas/Pet', nullable: true}
                kinds: {type: string, nullable: true, enum: [a, b]}
                bounded: {type: number, minimum: 0, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false}
                tuple: {type: array, items: [{type: string}, {type: integer}], additionalItems: false}
                legacy: {type: string, required: true}
                typed: {discriminator: {propertyName: kind}, xml: {name: t}, externalDocs: {url: x}, $schema: x, $id: x, type: object}
components:
  schemas:
    Pet: {type: object, properties: {name: {type: string}}}
"##,
        expect![[r##"
            things: POST /things
              http: {"body":{"mediaType":"application/json","shape":{"kind":"fields","fields":[{"name":"x-rate","argument":"x-rate"},{"name":"maybe","argument":"maybe"},{"name":"either","argument":"either"},{"name":"pet","argument":"pet"},{"name":"kinds","argument":"kinds"},{"name":"bounded","argument":"bounded"},{"name":"tuple","argument":"tuple"},{"name":"legacy","argument":"legacy"},{"name":"typed","argument":"typed"}]},"required":true}}
              input: {"type":"object","properties":{"x-rate":{"type":"integer"},"maybe":{"type":["string","null"],"examples":["hi"]},"either":{"description":"One of two.","anyOf":[{"oneOf":[{"type":"string"},{"type":"integer"}]},{"type":"null"}]},"pet":{"anyOf":[{"$ref":"#/$defs/Pet"},{"type":"null"}]},"kinds":{"type":["string","null"],"enum":["a","b",null]},"bounded":{"type":"number","maximum":9,"exclusiveMinimum":0},"tuple":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false},"legacy":{"type":"string"},"typed":{"type":"object"}},"required":["legacy"],"additionalProperties":false,"$defs":{"Pet":{"type":"object","properties":{"name":{"type":"string"}}}}}
              body: {}
        "##]],
    );
}

#[test]
fn references_resolve_once_and_cycles_stay_references() {
    let d = read_ok(
        r##"
openapi: 3.1.0
paths:
  /tree:
    get:
      operationId: tree
      parameters:
        - $ref: '#/components/parameters/a~1b'
        - $ref: '#/components/parameters/Percent%20Name'
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Node'}
components:
  parameters:
    a/b: {name: depth, in: query, schema: {$ref: '#/components/schemas/Depth'}}
    Percent Name: {name: order, in: query, schema: {$ref: '#/components/schemas/Node/properties/order'}}
  schemas:
    Depth: {type: integer, x-unused: 1}
    Node:
      type: object
      properties:
        order: {type: string, enum: [asc, desc]}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
        parent: {$ref: '#/components/schemas/Parent'}
    Parent: {$ref: '#/components/schemas/Node'}
    Loop: {$ref: '#/components/schemas/Loop'}
"##,
    );
    let op = &d.operations[0];
    expect![[r##"{"type":"object","properties":{"depth":{"$ref":"#/$defs/Depth"},"order":{"$ref":"#/$defs/Node_order"}},"additionalProperties":false,"$defs":{"Depth":{"type":"integer"},"Node_order":{"type":"string","enum":["asc","desc"]}}}"##]]
        .assert_eq(&op.input_schema.to_string());
    let output = op.output_schema.as_ref().unwrap();
    expect![[r##"{"$ref":"#/$defs/Node"} {"Node":{"type":"object","properties":{"order":{"type":"string","enum":["asc","desc"]},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}},"parent":{"$ref":"#/$defs/Parent"}}},"Parent":{"$ref":"#/$defs/Node"}}"##]]
        .assert_eq(&format!("{} {}", output["properties"]["body"], output["$defs"]));
    // The validator takes the schemas as they are.
    assert_eq!(crate::validate::Checker::default().problem(output), None);
    assert_eq!(
        crate::validate::Checker::default().check(&op.input_schema, &json!({ "depth": "deep" })),
        crate::validate::Checked::Invalid(vec!["depth: expected integer, got string".into()])
    );
}

#[test]
fn security_schemes_and_the_default_credential() {
    let d = read_ok(
        r##"
openapi: 3.0.0
security: [{oauth: [read]}, {token: []}]
paths: {}
components:
  securitySchemes:
    apiKeyHeader: {type: apiKey, name: X-Api-Key, in: header}
    apiKeyQuery: {type: apiKey, name: api_key, in: query}
    apiKeyCookie: {type: apiKey, name: session, in: cookie}
    token: {type: http, scheme: Bearer, bearerFormat: JWT}
    basic: {type: http, scheme: basic}
    digest: {type: http, scheme: digest}
    oauth:
      type: oauth2
      flows:
        clientCredentials: {tokenUrl: 'https://a.example/token', scopes: {admin: Everything}}
        authorizationCode: {authorizationUrl: 'https://a.example/auth', tokenUrl: 'https://a.example/token2', scopes: {read: Read}}
    oidc: {type: openIdConnect, openIdConnectUrl: 'https://a.example/.well-known/openid-configuration'}
    mtls: {type: mutualTLS}
    broken: {type: apiKey, in: header}
    linked: {$ref: '#/components/securitySchemes/basic'}
"##,
    );
    let schemes: Vec<String> =
        d.security_schemes.iter().map(|(name, s)| format!("{name}: {s:?} → {:?}", s.auth())).collect();
    expect![[r#"
        [
            "apiKeyCookie: ApiKey { name: \"session\", location: Cookie } → Some(Cookie { name: \"session\" })",
            "apiKeyHeader: ApiKey { name: \"X-Api-Key\", location: Header } → Some(Header { name: \"X-Api-Key\", prefix: \"\" })",
            "apiKeyQuery: ApiKey { name: \"api_key\", location: Query } → Some(Query { name: \"api_key\" })",
            "basic: Basic → Some(Basic)",
            "broken: Other(\"an API key without a name\") → None",
            "digest: Other(\"HTTP `digest` authentication\") → None",
            "linked: Basic → Some(Basic)",
            "mtls: Other(\"mutual TLS\") → None",
            "oauth: OAuth2 { authorization_url: Some(\"https://a.example/auth\"), token_url: Some(\"https://a.example/token2\"), refresh_url: None, scopes: {\"admin\": \"Everything\", \"read\": \"Read\"}, flows: [\"authorizationCode\", \"clientCredentials\"], code_flow: Some(CodeFlow { authorization_url: \"https://a.example/auth\", token_url: \"https://a.example/token2\" }) } → None",
            "oidc: OpenIdConnect { url: \"https://a.example/.well-known/openid-configuration\" } → None",
            "token: Bearer → Some(Header { name: \"Authorization\", prefix: \"Bearer \" })",
        ]
    "#]]
    .assert_debug_eq(&schemes);
    assert_eq!(d.security, ["oauth", "token"]);
    // The first document-level scheme that maps, not the first by name.
    assert_eq!(d.default_auth(), Some(HttpAuth::bearer()));
    let d = read_ok(
        "openapi: 3.0.0\ncomponents:\n  securitySchemes:\n    o: {type: oauth2, flows: {}}\n    k: {type: apiKey, name: k, in: query}\n",
    );
    assert_eq!(d.default_auth(), Some(HttpAuth::Query { name: "k".into() }));
    let d = read_ok(
        "swagger: '2.0'\nsecurityDefinitions:\n  b: {type: basic}\n  o: {type: oauth2, flow: implicit, authorizationUrl: 'https://x/a', scopes: {s: S}}\n",
    );
    assert_eq!(d.default_auth(), Some(HttpAuth::Basic));
    assert!(
        matches!(&d.security_schemes["o"], SecurityScheme::OAuth2 { authorization_url: Some(u), .. } if u == "https://x/a")
    );
    assert_eq!(read_ok("openapi: 3.0.0\n").default_auth(), None);
}

#[test]
fn the_scheme_a_person_signs_in_for_and_its_scopes() {
    let d = read_ok(
        r##"
openapi: 3.1.0
security: [{key: []}]
paths:
  /a: {get: {operationId: a, security: [{code: [read]}], responses: {'200': {description: ok}}}}
  /b: {post: {operationId: b, security: [{code: [read, write]}, {key: []}], responses: {'200': {description: ok}}}}
  /c: {get: {operationId: c, responses: {'200': {description: ok}}}}
components:
  securitySchemes:
    key: {type: apiKey, name: k, in: header}
    code:
      type: oauth2
      flows:
        implicit: {authorizationUrl: 'https://as.example/implicit', scopes: {read: R}}
        authorizationCode: {authorizationUrl: 'https://as.example/auth', tokenUrl: 'https://as.example/token', scopes: {read: R, write: W}}
    aImplicitOnly:
      type: oauth2
      flows: {implicit: {authorizationUrl: 'https://as.example/auth', scopes: {}}, password: {tokenUrl: 'https://as.example/token', scopes: {}}}
"##,
    );
    // The API key stays the default; the sign-in scheme is the one the operations ask for.
    assert_eq!(d.default_auth(), Some(HttpAuth::Header { name: "k".into(), prefix: String::new() }));
    let (name, scheme) = d.sign_in_scheme().unwrap();
    assert_eq!(name, "code");
    assert_eq!(d.scopes_asked("code"), ["read", "write"]);
    assert_eq!(d.scopes_asked("key"), [] as [String; 0]);
    let SecurityScheme::OAuth2 { flows, code_flow, .. } = scheme else { panic!("{scheme:?}") };
    assert_eq!(flows, &["authorizationCode", "implicit"]);
    assert_eq!(
        code_flow.as_ref().map(|f| (f.authorization_url.as_str(), f.token_url.as_str())),
        Some(("https://as.example/auth", "https://as.example/token"))
    );
    let SecurityScheme::OAuth2 { flows, code_flow, .. } = &d.security_schemes["aImplicitOnly"] else {
        panic!()
    };
    assert_eq!(flows, &["implicit", "password"]);
    assert_eq!(code_flow, &None);
    // 2.0's `accessCode` is the authorization code flow.
    let d = read_ok(
        "swagger: '2.0'\nsecurityDefinitions:\n  o: {type: oauth2, flow: accessCode, authorizationUrl: 'https://x/a', tokenUrl: 'https://x/t', scopes: {s: S}}\n",
    );
    assert!(matches!(d.sign_in_scheme(), Some(("o", SecurityScheme::OAuth2 { code_flow: Some(_), .. }))));
    assert_eq!(read_ok("openapi: 3.0.0\n").sign_in_scheme(), None);
}

#[test]
fn servers() {
    let d = read_ok(
        r#"
openapi: 3.0.0
servers:
  - url: 'https://{region}.api.example.com/{version}'
    description: Production
    variables:
      region: {default: eu, enum: [eu, us], description: Where}
      version: {default: 2}
  - url: /relative
  - {description: no url}
"#,
    );
    expect![[r#"
        [
            Server {
                url: "https://{region}.api.example.com/{version}",
                description: Some(
                    "Production",
                ),
                variables: {
                    "region": ServerVariable {
                        default: "eu",
                        values: [
                            "eu",
                            "us",
                        ],
                        description: Some(
                            "Where",
                        ),
                    },
                    "version": ServerVariable {
                        default: "2",
                        values: [],
                        description: None,
                    },
                },
            },
            Server {
                url: "/relative",
                description: None,
                variables: {},
            },
        ]
    "#]]
    .assert_debug_eq(&d.servers);
    let urls = |doc: &str| read_ok(doc).servers.into_iter().map(|s| s.url).collect::<Vec<_>>();
    assert_eq!(
        urls("swagger: '2.0'\nhost: api.example.com\nbasePath: /v1\nschemes: [http, https, ws]\n"),
        ["http://api.example.com/v1", "https://api.example.com/v1"]
    );
    assert_eq!(urls("swagger: '2.0'\nhost: api.example.com\nbasePath: /\n"), ["https://api.example.com"]);
    assert_eq!(urls("swagger: '2.0'\nbasePath: /v2\n"), ["/v2"]);
    assert!(urls("swagger: '2.0'\n").is_empty());
}

#[test]
fn yaml_reads_as_the_core_schema() {
    let d = read_ok(
        r#"
openapi: 3.0.0
paths:
  /a:
    get:
      operationId: a
      parameters:
        - {name: answer, in: query, schema: {type: string, enum: [yes, no, on, 0755, 1_000]}}
      responses:
        200:
          description: ok
          content:
            application/json:
              schema: &shared {type: object, properties: {n: {type: integer}}}
  /b:
    get:
      operationId: b
      responses:
        200: {description: ok, content: {application/json: {schema: *shared}}}
"#,
    );
    assert_eq!(
        d.operations[0].input_schema["properties"]["answer"]["enum"],
        json!(["yes", "no", "on", "0755", "1_000"])
    );
    let body = |i: usize| d.operations[i].output_schema.as_ref().unwrap()["properties"]["body"].clone();
    assert_eq!(body(0), json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
    assert_eq!(body(0), body(1));
}

#[test]
fn undeclared_path_parameters_are_strings() {
    check(
        "openapi: 3.0.0\npaths:\n  /a/{b}/{c}:\n    get:\n      operationId: a\n      parameters: [{name: c, in: path, schema: {type: integer}}]\n",
        expect![[r#"
            a: GET /a/{b}/{c}
              http: {"parameters":[{"name":"c","in":"path","argument":"c"},{"name":"b","in":"path","argument":"b"}]}
              input: {"type":"object","properties":{"c":{"type":"integer"},"b":{"type":"string"}},"required":["c","b"],"additionalProperties":false}
              body: {}
            problem: `a` (GET /a/{b}/{c}): path parameter `b` is not declared; read as a string
        "#]],
    );
}

#[test]
fn path_items_by_reference() {
    check(
        r##"
openapi: 3.1.0
paths:
  /a: {$ref: '#/components/pathItems/A'}
  /loop: {$ref: '#/paths/~1loop'}
  not-a-path: {get: {}}
  x-ext: {get: {}}
components:
  pathItems:
    A: {get: {operationId: getA}}
"##,
        expect![[r#"
            getA: GET /a
              input: {"type":"object","properties":{},"additionalProperties":false}
              body: {}
            problem: path `/loop`: `$ref` `#/paths/~1loop` at `/paths/~1loop` refers to itself in a circle; left out
            problem: path `not-a-path` does not start with `/`; its operations are left out
        "#]],
    );
}
