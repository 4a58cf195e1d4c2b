//! Typegen and `describe` against real servers' tool lists and hostile schemas. Every declaration
//! printed here must parse as TypeScript (checked with oxc) and stay within its token budget.

use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::{Manifest, ToolRecord};
use capabilities_core::surface::describe::{DescribeError, describe};
use capabilities_core::tokens;
use capabilities_core::typegen::signature_line;
use expect_test::{Expect, expect};
use serde_json::{Value, json};

const BUDGET: usize = 2_500;

fn manifest(namespace: &str, tools_list: &str) -> Manifest {
    let entries: Vec<Value> = serde_json::from_str(tools_list).expect("fixture is JSON");
    let (manifest, problems) = Manifest::from_tools_list(Namespace::new(namespace).unwrap(), &entries);
    assert!(problems.is_empty(), "{problems:?}");
    manifest
}

fn source(manifest: Manifest) -> SourceView {
    SourceView { manifest, connections: vec!["default".into()], default_connection: Some("default".into()) }
}

fn real_catalog() -> Catalog {
    Catalog::new(vec![
        source(manifest("everything", include_str!("../data/tools/everything.json"))),
        source(manifest("filesystem", include_str!("../data/tools/filesystem.json"))),
        source(manifest("github", include_str!("../data/tools/github.json"))),
        source(manifest("memory", include_str!("../data/tools/memory.json"))),
        source(manifest("playwright", include_str!("../data/tools/playwright.json"))),
    ])
}

/// A catalog with one namespace, `t`, holding one tool per (input, output) schema pair, named
/// `tool0`, `tool1`, …. Schemas are moved, never cloned, so very deep ones are fine.
fn schema_catalog(tools: Vec<(Value, Option<Value>)>) -> Catalog {
    let records = tools
        .into_iter()
        .enumerate()
        .map(|(i, (input_schema, output_schema))| ToolRecord {
            name: format!("tool_{i}"),
            title: None,
            description: "A tool.".into(),
            input_schema,
            output_schema,
            annotations: Default::default(),
            http: None,
        })
        .collect();
    Catalog::new(vec![source(Manifest::from_records(Namespace::new("t").unwrap(), records))])
}

/// Whether `ts` is a valid TypeScript declaration file: no syntax or semantic errors.
fn parses(ts: &str) -> Result<(), String> {
    use oxc::allocator::Allocator;
    use oxc::parser::Parser;
    use oxc::semantic::SemanticBuilder;
    use oxc::span::SourceType;
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, ts, SourceType::d_ts()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return Err(format!("does not parse: {:?}", parsed.diagnostics));
    }
    let semantic = SemanticBuilder::new().with_check_syntax_error(true).build(&parsed.program);
    if !semantic.diagnostics.is_empty() {
        return Err(format!("semantic errors: {:?}", semantic.diagnostics));
    }
    Ok(())
}

fn assert_parses(ts: &str) {
    if let Err(e) = parses(ts) {
        panic!("{e}\n{ts}");
    }
}

fn run(catalog: &Catalog, targets: &[&str], budget: usize) -> Result<String, DescribeError> {
    let targets: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
    describe(catalog, &targets, &|_: &ToolAddress| true, budget)
}

fn described(catalog: &Catalog, targets: &[&str], budget: usize) -> String {
    let text = run(catalog, targets, budget).unwrap_or_else(|e| panic!("{e}"));
    assert_parses(&text);
    let used = tokens::count(&text);
    assert!(used <= budget, "{used} tokens over a budget of {budget}:\n{text}");
    text
}

fn check(targets: &[&str], expect: Expect) {
    expect.assert_eq(&described(&real_catalog(), targets, BUDGET));
}

fn check_budget(targets: &[&str], budget: usize, expect: Expect) {
    expect.assert_eq(&described(&real_catalog(), targets, budget));
}

/// Describes one tool whose input schema is `input` (and output schema `output`).
fn check_schema(input: Value, output: Option<Value>, expect: Expect) {
    let catalog = schema_catalog(vec![(input, output)]);
    expect.assert_eq(&described(&catalog, &["t.tool0"], BUDGET));
}

fn check_signature(catalog: &Catalog, address: &str, expect: Expect) {
    let address = ToolAddress::parse(address).unwrap();
    let tool = catalog.tool(&address).expect("tool exists");
    let line = signature_line(&address, tool);
    assert!(line.chars().count() <= 300, "{line}");
    expect.assert_eq(&line);
}

#[test]
fn describes_filesystem() {
    check(
        &["filesystem"],
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const filesystem: {
        	/** Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead. */
        	readFile(input: {
        		path: string;
        		/** If provided, returns only the last N lines of the file */
        		tail?: number;
        		/** If provided, returns only the first N lines of the file */
        		head?: number;
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Read the complete contents of a file from the file system as text. Handles various text encodings and provides detailed error messages if the file cannot be read. Use this tool when you need to examine the contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the file as text regardless of extension. Only works within allowed directories. */
        	readTextFile(input: {
        		path: string;
        		/** If provided, returns only the last N lines of the file */
        		tail?: number;
        		/** If provided, returns only the first N lines of the file */
        		head?: number;
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are returned as image/audio content; any other file type is returned as an embedded resource. Only works within allowed directories. */
        	readMediaFile(input: { path: string }, options?: CallOptions): Promise<{
        		content: ({ type: "image" | "audio"; data: string; mimeType: string } | {
        			type: "resource";
        			resource: { uri: string; blob: string; mimeType?: string };
        		})[];
        	}>;
        	/** Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories. */
        	readMultipleFiles(input: {
        		/**
        		 * Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.
        		 * @minItems 1
        		 */
        		paths: string[];
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. Handles text content with proper encoding. Only works within allowed directories. */
        	writeFile(input: { path: string; content: string }, options?: CallOptions): Promise<{ content: string }>;
        	/** Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Returns a git-style diff showing the changes made. Only works within allowed directories. */
        	editFile(input: {
        		path: string;
        		edits: {
        			/** Text to search for - must match exactly */
        			oldText: string;
        			/** Text to replace with */
        			newText: string;
        		}[];
        		/**
        		 * Preview changes using git-style diff format
        		 * @default false
        		 */
        		dryRun?: boolean;
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation. If the directory already exists, this operation will succeed silently. Perfect for setting up directory structures for projects or ensuring required paths exist. Only works within allowed directories. */
        	createDirectory(input: { path: string }, options?: CallOptions): Promise<{ content: string }>;
        	/** Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is essential for understanding directory structure and finding specific files within a directory. Only works within allowed directories. */
        	listDirectory(input: { path: string }, options?: CallOptions): Promise<{ content: string }>;
        	/** Get a detailed listing of all files and directories in a specified path, including sizes. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is useful for understanding directory structure and finding specific files within a directory. Only works within allowed directories. */
        	listDirectoryWithSizes(input: {
        		path: string;
        		/**
        		 * Sort entries by name or size
        		 * @default "name"
        		 */
        		sortBy?: "name" | "size";
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array (which may be empty). The output is formatted with 2-space indentation for readability. Only works within allowed directories. */
        	directoryTree(input: {
        		path: string;
        		/** @default [] */
        		excludePatterns?: string[];
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Move or rename files and directories. Can move files between directories and rename them in a single operation. If the destination exists, the operation will fail. Works across different directories and can be used for simple renaming within the same directory. Both source and destination must be within allowed directories. */
        	moveFile(input: { source: string; destination: string }, options?: CallOptions): Promise<{ content: string }>;
        	/** Recursively search for files and directories matching a pattern. The patterns should be glob-style patterns that match paths relative to the working directory. Use pattern like '*.ext' to match files in current directory, and '**\/*.ext' to match files in all subdirectories. Returns full paths to all matching items. Great for finding files when you don't know their exact location. Only searches within allowed directories. */
        	searchFiles(input: {
        		path: string;
        		pattern: string;
        		/** @default [] */
        		excludePatterns?: string[];
        	}, options?: CallOptions): Promise<{ content: string }>;
        	/** Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, creation time, last modified time, permissions, and type. This tool is perfect for understanding file characteristics without reading the actual content. Only works within allowed directories. */
        	getFileInfo(input: { path: string }, options?: CallOptions): Promise<{ content: string }>;
        	/** Returns the list of directories that this server is allowed to access. Subdirectories within these allowed directories are also accessible. Use this to understand which directories and their nested paths are available before trying to access files. */
        	listAllowedDirectories(input?: {}, options?: CallOptions): Promise<{ content: string }>;
        };
    "#]],
    );
}

#[test]
fn describes_a_playwright_tool() {
    check(
        &["playwright.browserClick"],
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const playwright: {
        	/** Perform click on a web page */
        	browserClick(input: {
        		/** Exact target element reference from the page snapshot, or a unique element selector */
        		target: string;
        		/** Human-readable element description used to obtain permission to interact with the element */
        		element?: string;
        		/** Whether to perform a double click instead of a single click */
        		doubleClick?: boolean;
        		/** Button to click, defaults to left */
        		button?: "left" | "right" | "middle";
        		/** Modifier keys to press */
        		modifiers?: ("Alt" | "Control" | "ControlOrMeta" | "Meta" | "Shift")[];
        	}, options?: CallOptions): Promise<unknown>;
        };
    "#]],
    );
}

#[test]
fn describes_memory_with_output_schemas() {
    check(
        &["memory"],
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const memory: {
        	/** Create multiple new entities in the knowledge graph */
        	createEntities(input: {
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        	}, options?: CallOptions): Promise<{
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        	}>;
        	/** Create multiple new relations between entities in the knowledge graph. Relations should be in active voice */
        	createRelations(input: {
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}, options?: CallOptions): Promise<{
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}>;
        	/** Add new observations to existing entities in the knowledge graph */
        	addObservations(input: {
        		observations: {
        			/** The name of the entity to add the observations to */
        			entityName: string;
        			/** An array of observation contents to add */
        			contents: string[];
        		}[];
        	}, options?: CallOptions): Promise<{ results: { entityName: string; addedObservations: string[] }[] }>;
        	/** Delete multiple entities and their associated relations from the knowledge graph */
        	deleteEntities(input: {
        		/** An array of entity names to delete */
        		entityNames: string[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Delete specific observations from entities in the knowledge graph */
        	deleteObservations(input: {
        		deletions: {
        			/** The name of the entity containing the observations */
        			entityName: string;
        			/** An array of observations to delete */
        			observations: string[];
        		}[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Delete multiple relations from the knowledge graph */
        	deleteRelations(input: {
        		/** An array of relations to delete */
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Read the entire knowledge graph */
        	readGraph(input?: {}, options?: CallOptions): Promise<{
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}>;
        	/** Search for nodes in the knowledge graph based on a query */
        	searchNodes(input: {
        		/** The search query to match against entity names, types, and observation content */
        		query: string;
        	}, options?: CallOptions): Promise<{
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}>;
        	/** Open specific nodes in the knowledge graph by their names */
        	openNodes(input: {
        		/** An array of entity names to retrieve */
        		names: string[];
        	}, options?: CallOptions): Promise<{
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}>;
        };
    "#]],
    );
}

#[test]
fn describes_a_review_with_any_of_items() {
    check(
        &["github.createPullRequestReview"],
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const github: {
        	/** Create a review on a pull request */
        	createPullRequestReview(input: {
        		/** Repository owner (username or organization) */
        		owner: string;
        		/** Repository name */
        		repo: string;
        		/** Pull request number */
        		pull_number: number;
        		/** The body text of the review */
        		body: string;
        		/** The review action to perform */
        		event: "APPROVE" | "REQUEST_CHANGES" | "COMMENT";
        		/** The SHA of the commit that needs a review */
        		commit_id?: string;
        		/** Comments to post as part of the review (specify either position or line, not both) */
        		comments?: ({
        			/** The relative path to the file being commented on */
        			path: string;
        			/** The position in the diff where you want to add a review comment */
        			position: number;
        			/** Text of the review comment */
        			body: string;
        		} | {
        			/** The relative path to the file being commented on */
        			path: string;
        			/** The line number in the file where you want to add a review comment */
        			line: number;
        			/** Text of the review comment */
        			body: string;
        		})[];
        	}, options?: CallOptions): Promise<unknown>;
        };
    "#]],
    );
}

#[test]
fn signature_lines() {
    let catalog = real_catalog();
    check_signature(
        &catalog,
        "github.createIssue",
        expect![
            "github.createIssue(input: { owner: string; repo: string; title: string; body?: string; assignees?: string[]; milestone?: number; labels?: string[] }): Promise<unknown>"
        ],
    );
    check_signature(
        &catalog,
        "memory.readGraph",
        expect!["memory.readGraph(input?: {}): Promise<{ entities: { … }[]; relations: { … }[] }>"],
    );
    check_signature(
        &catalog,
        "github.createPullRequestReview",
        expect![[
            r#"github.createPullRequestReview(input: { owner: string; repo: string; pull_number: number; body: string; event: "APPROVE" | "REQUEST_CHANGES" | "COMMENT"; commit_id?: string; comments?: ({ … } | { … })[] }): Promise<unknown>"#
        ]],
    );
    check_signature(
        &catalog,
        "filesystem.editFile",
        expect![
            "filesystem.editFile(input: { path: string; edits: { oldText: string; newText: string }[]; dryRun?: boolean }): Promise<{ content: string }>"
        ],
    );
    check_signature(
        &catalog,
        "playwright.browserFillForm",
        expect![[
            r#"playwright.browserFillForm(input: { fields: { target: string; name: string; type: "textbox" | "checkbox" | "radio" | "combobox" | "slider"; value: string; element?: string }[] }): Promise<unknown>"#
        ]],
    );
}

#[test]
fn describes_github_within_budget() {
    check(
        &["github"],
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const github: {
        	/** Create or update a single file in a GitHub repository */
        	createOrUpdateFile(input: {
        		owner: string;
        		repo: string;
        		path: string;
        		content: string;
        		message: string;
        		branch: string;
        		sha?: string;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Search for GitHub repositories */
        	searchRepositories(input: { query: string; page?: number; perPage?: number }, options?: CallOptions): Promise<unknown>;
        	/** Create a new GitHub repository in your account */
        	createRepository(input: {
        		name: string;
        		description?: string;
        		private?: boolean;
        		autoInit?: boolean;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Get the contents of a file or directory from a GitHub repository */
        	getFileContents(input: { owner: string; repo: string; path: string; branch?: string }, options?: CallOptions): Promise<unknown>;
        	/** Push multiple files to a GitHub repository in a single commit */
        	pushFiles(input: {
        		owner: string;
        		repo: string;
        		branch: string;
        		files: { path: string; content: string }[];
        		message: string;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Create a new issue in a GitHub repository */
        	createIssue(input: {
        		owner: string;
        		repo: string;
        		title: string;
        		body?: string;
        		assignees?: string[];
        		milestone?: number;
        		labels?: string[];
        	}, options?: CallOptions): Promise<unknown>;
        	/** Create a new pull request in a GitHub repository */
        	createPullRequest(input: {
        		owner: string;
        		repo: string;
        		title: string;
        		head: string;
        		base: string;
        		body?: string;
        		draft?: boolean;
        		maintainer_can_modify?: boolean;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Fork a GitHub repository to your account or specified organization */
        	forkRepository(input: { owner: string; repo: string; organization?: string }, options?: CallOptions): Promise<unknown>;
        	/** Create a new branch in a GitHub repository */
        	createBranch(input: { owner: string; repo: string; branch: string; from_branch?: string }, options?: CallOptions): Promise<unknown>;
        	/** Get list of commits of a branch in a GitHub repository */
        	listCommits(input: {
        		owner: string;
        		repo: string;
        		sha?: string;
        		page?: number;
        		perPage?: number;
        	}, options?: CallOptions): Promise<unknown>;
        	/** List issues in a GitHub repository with filtering options */
        	listIssues(input: {
        		owner: string;
        		repo: string;
        		direction?: "asc" | "desc";
        		labels?: string[];
        		page?: number;
        		per_page?: number;
        		since?: string;
        		sort?: "created" | "updated" | "comments";
        		state?: "open" | "closed" | "all";
        	}, options?: CallOptions): Promise<unknown>;
        	/** Update an existing issue in a GitHub repository */
        	updateIssue(input: {
        		owner: string;
        		repo: string;
        		issue_number: number;
        		title?: string;
        		body?: string;
        		assignees?: string[];
        		milestone?: number;
        		labels?: string[];
        		state?: "open" | "closed";
        	}, options?: CallOptions): Promise<unknown>;
        	/** Add a comment to an existing issue */
        	addIssueComment(input: { owner: string; repo: string; issue_number: number; body: string }, options?: CallOptions): Promise<unknown>;
        	/** Search for code across GitHub repositories */
        	searchCode(input: { q: string; order?: "asc" | "desc"; page?: number; per_page?: number }, options?: CallOptions): Promise<unknown>;
        	/** Search for issues and pull requests across GitHub repositories */
        	searchIssues(input: {
        		q: string;
        		order?: "asc" | "desc";
        		page?: number;
        		per_page?: number;
        		sort?: "comments" | "reactions" | "reactions-+1" | "reactions--1" | "reactions-smile" | "reactions-thinking_face" | "reactions-heart" | "reactions-tada" | "interactions" | "created" | "updated";
        	}, options?: CallOptions): Promise<unknown>;
        	/** Search for users on GitHub */
        	searchUsers(input: {
        		q: string;
        		order?: "asc" | "desc";
        		page?: number;
        		per_page?: number;
        		sort?: "followers" | "repositories" | "joined";
        	}, options?: CallOptions): Promise<unknown>;
        	/** Get details of a specific issue in a GitHub repository. */
        	getIssue(input: { owner: string; repo: string; issue_number: number }, options?: CallOptions): Promise<unknown>;
        	/** Get details of a specific pull request */
        	getPullRequest(input: { owner: string; repo: string; pull_number: number }, options?: CallOptions): Promise<unknown>;
        	/** List and filter repository pull requests */
        	listPullRequests(input: {
        		owner: string;
        		repo: string;
        		state?: "open" | "closed" | "all";
        		head?: string;
        		base?: string;
        		sort?: "created" | "updated" | "popularity" | "long-running";
        		direction?: "asc" | "desc";
        		per_page?: number;
        		page?: number;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Create a review on a pull request */
        	createPullRequestReview(input: {
        		owner: string;
        		repo: string;
        		pull_number: number;
        		body: string;
        		event: "APPROVE" | "REQUEST_CHANGES" | "COMMENT";
        		commit_id?: string;
        		comments?: ({ path: string; position: number; body: string } | { path: string; line: number; body: string })[];
        	}, options?: CallOptions): Promise<unknown>;
        	/** Merge a pull request */
        	mergePullRequest(input: {
        		owner: string;
        		repo: string;
        		pull_number: number;
        		commit_title?: string;
        		commit_message?: string;
        		merge_method?: "merge" | "squash" | "rebase";
        	}, options?: CallOptions): Promise<unknown>;
        	/** Get the list of files changed in a pull request */
        	getPullRequestFiles(input: { owner: string; repo: string; pull_number: number }, options?: CallOptions): Promise<unknown>;
        	/** Get the combined status of all status checks for a pull request */
        	getPullRequestStatus(input: { owner: string; repo: string; pull_number: number }, options?: CallOptions): Promise<unknown>;
        	/** Update a pull request branch with the latest changes from the base branch */
        	updatePullRequestBranch(input: {
        		owner: string;
        		repo: string;
        		pull_number: number;
        		expected_head_sha?: string;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Get the review comments on a pull request */
        	getPullRequestComments(input: { owner: string; repo: string; pull_number: number }, options?: CallOptions): Promise<unknown>;
        	/** Get the reviews on a pull request */
        	getPullRequestReviews(input: { owner: string; repo: string; pull_number: number }, options?: CallOptions): Promise<unknown>;
        };
    "#]],
    );
}

#[test]
fn names_deeper_types_when_the_budget_is_tight() {
    check_budget(
        &["memory"],
        900,
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const memory: {
        	/** Create multiple new entities in the knowledge graph */
        	createEntities(input: {
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        	}, options?: CallOptions): Promise<{ entities: memory.CreateEntitiesResultEntitiesItem[] }>;
        	/** Create multiple new relations between entities in the knowledge graph. */
        	createRelations(input: {
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}, options?: CallOptions): Promise<{ relations: memory.CreateRelationsResultRelationsItem[] }>;
        	/** Add new observations to existing entities in the knowledge graph */
        	addObservations(input: {
        		observations: {
        			/** The name of the entity to add the observations to */
        			entityName: string;
        			/** An array of observation contents to add */
        			contents: string[];
        		}[];
        	}, options?: CallOptions): Promise<{ results: memory.AddObservationsResultResultsItem[] }>;
        	/** Delete multiple entities and their associated relations from the knowledge graph */
        	deleteEntities(input: {
        		/** An array of entity names to delete */
        		entityNames: string[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Delete specific observations from entities in the knowledge graph */
        	deleteObservations(input: {
        		deletions: {
        			/** The name of the entity containing the observations */
        			entityName: string;
        			/** An array of observations to delete */
        			observations: string[];
        		}[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Delete multiple relations from the knowledge graph */
        	deleteRelations(input: {
        		/** An array of relations to delete */
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}, options?: CallOptions): Promise<{ success: boolean; message: string }>;
        	/** Read the entire knowledge graph */
        	readGraph(input?: {}, options?: CallOptions): Promise<{
        		entities: memory.ReadGraphResultEntitiesItem[];
        		relations: memory.ReadGraphResultRelationsItem[];
        	}>;
        	/** Search for nodes in the knowledge graph based on a query */
        	searchNodes(input: {
        		/** The search query to match against entity names, types, and observation content */
        		query: string;
        	}, options?: CallOptions): Promise<{
        		entities: memory.SearchNodesResultEntitiesItem[];
        		relations: memory.SearchNodesResultRelationsItem[];
        	}>;
        	/** Open specific nodes in the knowledge graph by their names */
        	openNodes(input: {
        		/** An array of entity names to retrieve */
        		names: string[];
        	}, options?: CallOptions): Promise<{
        		entities: memory.OpenNodesResultEntitiesItem[];
        		relations: memory.OpenNodesResultRelationsItem[];
        	}>;
        };

        // Names such as memory.CreateEntitiesResultEntitiesItem stand for types not shown here: describe them by name.
    "#]],
    );
}

#[test]
fn describes_a_named_type() {
    let text = described(&real_catalog(), &["memory"], 900);
    assert!(text.contains("memory.ReadGraphResult"), "{text}");
    check(
        &["memory.ReadGraphResult", "memory.CreateEntitiesInputEntitiesItem"],
        expect![[r#"
        declare namespace memory {
        	interface ReadGraphResult {
        		entities: {
        			/** The name of the entity */
        			name: string;
        			/** The type of the entity */
        			entityType: string;
        			/** An array of observation contents associated with the entity */
        			observations: string[];
        		}[];
        		relations: {
        			/** The name of the entity where the relation starts */
        			from: string;
        			/** The name of the entity where the relation ends */
        			to: string;
        			/** The type of the relation */
        			relationType: string;
        		}[];
        	}
        	interface CreateEntitiesInputEntitiesItem {
        		/** The name of the entity */
        		name: string;
        		/** The type of the entity */
        		entityType: string;
        		/** An array of observation contents associated with the entity */
        		observations: string[];
        	}
        }
    "#]],
    );
}

#[test]
fn leaves_out_tools_that_do_not_fit() {
    check_budget(
        &["playwright", "everything"],
        700,
        expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const playwright: {
        	/** Close the page */
        	browserClose(input?: {}, options?: CallOptions): Promise<unknown>;
        	/** Resize the browser window */
        	browserResize(input: { width: number; height: number }, options?: CallOptions): Promise<unknown>;
        	/** Returns all console messages */
        	browserConsoleMessages(input: {
        		level: "error" | "warning" | "info" | "debug";
        		all?: boolean;
        		filename?: string;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Handle a dialog */
        	browserHandleDialog(input: { accept: boolean; promptText?: string }, options?: CallOptions): Promise<unknown>;
        	/** Emulate CSS media features for the page, for example switch between the light and dark color scheme. */
        	browserEmulateMedia(input?: {
        		colorScheme?: "light" | "dark" | null;
        		reducedMotion?: "reduce" | "no-preference" | null;
        		forcedColors?: "active" | "none" | null;
        		contrast?: "more" | "no-preference" | null;
        		media?: "screen" | "print" | null;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Evaluate JavaScript expression on page or element */
        	browserEvaluate(input: {
        		function: string;
        		element?: string;
        		target?: string;
        		filename?: string;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Upload one or multiple files */
        	browserFileUpload(input?: { paths?: string[] }, options?: CallOptions): Promise<unknown>;
        	/** Drop files or MIME-typed data onto an element, as if dragged from outside the page. */
        	browserDrop(input: {
        		target: string;
        		element?: string;
        		paths?: string[];
        		data?: playwright.BrowserDropInputData;
        	}, options?: CallOptions): Promise<unknown>;
        	/** Search the accessibility snapshot of the current page for text or a regular expression. */
        	browserFind(input?: { text?: string; regex?: string; filename?: string }, options?: CallOptions): Promise<unknown>;
        	/** Fill multiple form fields */
        	browserFillForm(input: { fields: playwright.BrowserFillFormInputFieldsItem[] }, options?: CallOptions): Promise<unknown>;
        	/** Press a key on the keyboard */
        	browserPressKey(input: { key: string }, options?: CallOptions): Promise<unknown>;
        	/** Type text into editable element */
        	browserType(input: {
        		target: string;
        		text: string;
        		element?: string;
        		submit?: boolean;
        		slowly?: boolean;
        	}, options?: CallOptions): Promise<unknown>;
        	// 13 more tools not shown, to stay within the token budget: describe fewer at a time, such as playwright.browserNavigate
        };

        declare const everything: {
        	// 19 tools not shown, to stay within the token budget: describe fewer at a time, such as everything.echo
        };

        // Names such as playwright.BrowserDropInputData stand for types not shown here: describe them by name.
    "#]],
    );
}

#[test]
fn types_and_nullability() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "a": { "type": ["string", "null"] },
                "b": { "type": "integer", "nullable": true },
                "c": { "anyOf": [{ "type": "number" }, { "type": "null" }] },
                "d": { "type": ["string", "number", "boolean"] },
                "e": true,
                "f": false,
                "g": { "type": "array" },
                "h": { "type": "object" },
                "i": {},
            },
            "required": ["a", "b", "c", "d", "e", "f"],
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input: {
            		a: string | null;
            		b: number | null;
            		c: number | null;
            		d: string | number | boolean;
            		e: unknown;
            		f: never;
            		g?: unknown[];
            		h?: { [key: string]: unknown };
            		i?: unknown;
            	}, options?: CallOptions): Promise<unknown>;
            };
        "#]],
    );
}

#[test]
fn literals_are_quoted_safely() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "quote": { "enum": ["say \"hi\"", "back\\slash", "line\nbreak", "*/ not a comment end", "ünï"] },
                "mixed": { "enum": [1, -2.5, true, null, "x", 1e21] },
                "fixed": { "const": "v1" },
                "json": { "enum": [{ "a": [1, { "b": null }] }, []] },
                "empty": { "enum": [] },
            },
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input?: {
            		quote?: "say \"hi\"" | "back\\slash" | "line\nbreak" | "*/ not a comment end" | "ünï";
            		mixed?: 1 | -2.5 | true | null | "x" | 1e+21;
            		fixed?: "v1";
            		json?: {"a":[1,{"b":null}]} | [];
            		empty?: never;
            	}, options?: CallOptions): Promise<unknown>;
            };
        "#]],
    );
}

#[test]
fn combinators() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "one": { "oneOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }] },
                "all": { "allOf": [
                    { "type": "object", "properties": { "x": { "type": "number" } }, "required": ["x"] },
                    { "type": "object", "properties": { "y": { "type": "number" } } },
                ] },
                "overlap": { "allOf": [
                    { "type": "object", "properties": { "x": { "type": "number" } } },
                    { "type": "object", "properties": { "x": { "type": "integer" } } },
                ] },
                "narrowed": { "type": "string", "anyOf": [{ "format": "date" }, { "format": "date-time" }] },
            },
            "required": ["one"],
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input: {
            		one: string | string[];
            		all?: { x: number; y?: number };
            		overlap?: { x?: number } & { x?: number };
            		narrowed?: string;
            	}, options?: CallOptions): Promise<unknown>;
            };
        "#]],
    );
}

#[test]
fn references_and_recursion() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "tree": { "$ref": "#/$defs/Node" },
                "state": { "$ref": "#/definitions/issue_state", "description": "Where the issue stands." },
                "self": { "$ref": "#" },
                "missing": { "$ref": "#/$defs/Nope" },
                "remote": { "$ref": "https://example.com/schema.json" },
            },
            "required": ["tree"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "description": "A node of a tree.",
                    "properties": {
                        "label": { "type": "string" },
                        "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } },
                    },
                    "required": ["label"],
                },
            },
            "definitions": { "issue_state": { "enum": ["open", "closed"] } },
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input: {
            		/** A node of a tree. */
            		tree: t.Node;
            		/** Where the issue stands. */
            		state?: "open" | "closed";
            		self?: t.Tool0InputSelf;
            		missing?: unknown /* $ref `#/$defs/Nope` points nowhere */;
            		remote?: unknown /* unresolved $ref `https://example.com/schema.json` */;
            	}, options?: CallOptions): Promise<unknown>;
            };

            declare namespace t {
            	/** A node of a tree. */
            	interface Node { label: string; children?: t.Node[] }
            	interface Tool0InputSelf {
            		/** A node of a tree. */
            		tree: t.Node;
            		/** Where the issue stands. */
            		state?: "open" | "closed";
            		self?: t.Tool0InputSelf;
            		missing?: unknown /* $ref `#/$defs/Nope` points nowhere */;
            		remote?: unknown /* unresolved $ref `https://example.com/schema.json` */;
            	}
            }
        "#]],
    );
}

#[test]
fn arrays_tuples_and_maps() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "point": { "type": "array", "prefixItems": [{ "type": "number" }, { "type": "number" }], "items": false },
                "row": { "type": "array", "prefixItems": [{ "type": "string" }], "items": { "type": "number" } },
                "old": { "type": "array", "items": [{ "type": "string" }, { "type": "boolean" }] },
                "headers": {
                    "type": "object",
                    "properties": { "host": { "type": "string" } },
                    "additionalProperties": { "type": "string" },
                },
                "env": { "type": "object", "patternProperties": { "^[A-Z_]+$": { "type": "string" } }, "additionalProperties": false },
                "scores": { "type": "object", "propertyNames": { "enum": ["a", "b"] }, "additionalProperties": { "type": "number" } },
            },
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input?: {
            		point?: [number, number];
            		row?: [string, ...number[]];
            		old?: [string, boolean];
            		headers?: { host?: string; [key: string]: string };
            		env?: {
            			/** keys matching ^[A-Z_]+$ */
            			[key: string]: string;
            		};
            		scores?: {
            			/** keys: "a", "b" */
            			[key: string]: number;
            		};
            	}, options?: CallOptions): Promise<unknown>;
            };
        "#]],
    );
}

#[test]
fn hints_and_odd_names() {
    check_schema(
        json!({
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "Results per page." },
                "url": { "type": "string", "format": "uri" },
                "tags": { "type": "array", "items": { "type": "string" }, "uniqueItems": true, "maxItems": 5 },
                "x-api-key": { "type": "string", "pattern": "^[a-z]+$", "deprecated": true },
                "2fa": { "type": "string", "examples": ["123456"] },
                "class": { "type": "string" },
                "": { "type": "string" },
            },
            "required": ["x-api-key"],
        }),
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input: {
            		/**
            		 * @pattern ^[a-z]+$
            		 * @deprecated
            		 */
            		"x-api-key": string;
            		/**
            		 * Results per page.
            		 * @default 10
            		 * @minimum 1
            		 * @maximum 100
            		 */
            		limit?: number;
            		/** @format uri */
            		url?: string;
            		/**
            		 * @maxItems 5
            		 * @uniqueItems
            		 */
            		tags?: string[];
            		/** @example "123456" */
            		"2fa"?: string;
            		class?: string;
            		""?: string;
            	}, options?: CallOptions): Promise<unknown>;
            };
        "#]],
    );
}

#[test]
fn a_titled_output_is_a_named_type() {
    let issue = json!({
        "title": "Issue",
        "type": "object",
        "description": "An issue.",
        "properties": { "number": { "type": "integer" }, "title": { "type": "string" } },
        "required": ["number", "title"],
    });
    let catalog = schema_catalog(vec![
        (
            json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] }),
            Some(issue.clone()),
        ),
        (json!({ "type": "object" }), Some(issue)),
    ]);
    expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const t: {
        	/** A tool. */
        	tool0(input: { n: number }, options?: CallOptions): Promise<t.Issue>;
        	/** A tool. */
        	tool1(input?: { [key: string]: unknown }, options?: CallOptions): Promise<t.Issue>;
        };

        declare namespace t {
        	/** An issue. */
        	interface Issue { number: number; title: string }
        }
    "#]]
    .assert_eq(&described(&catalog, &["t"], BUDGET));
    let address = ToolAddress::parse("t.tool0").unwrap();
    expect!["t.tool0(input: { n: number }): Promise<Issue>"]
        .assert_eq(&signature_line(&address, catalog.tool(&address).unwrap()));
}

#[test]
fn same_title_different_types_get_path_names() {
    let output = |field: &str| json!({ "title": "Result", "type": "object", "properties": { field: { "type": "string" } } });
    let catalog = schema_catalog(vec![
        (json!({ "type": "object" }), Some(output("a"))),
        (json!({ "type": "object" }), Some(output("b"))),
    ]);
    expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const t: {
        	/** A tool. */
        	tool0(input?: { [key: string]: unknown }, options?: CallOptions): Promise<t.Tool0Result>;
        	/** A tool. */
        	tool1(input?: { [key: string]: unknown }, options?: CallOptions): Promise<t.Tool1Result>;
        };

        declare namespace t {
        	interface Tool0Result { a?: string }
        	interface Tool1Result { b?: string }
        }
    "#]]
    .assert_eq(&described(&catalog, &["t"], BUDGET));
}

/// `levels` objects nested inside each other, each with one property `a`.
fn nested(levels: usize) -> Value {
    let mut schema = json!({ "type": "string" });
    for _ in 0..levels {
        let mut properties = serde_json::Map::new();
        properties.insert("a".into(), schema);
        let mut object = serde_json::Map::new();
        object.insert("type".into(), json!("object"));
        object.insert("properties".into(), Value::Object(properties));
        schema = Value::Object(object);
    }
    schema
}

#[test]
fn hostile_schemas_degrade_to_unknown() {
    let many_values: Vec<Value> = (0..10_000).map(|i| json!(format!("v{i}"))).collect();
    let many_props: serde_json::Map<String, Value> =
        (0..5_000).map(|i| (format!("p{i}"), json!({ "type": "number" }))).collect();
    let mut schema = json!({
            "type": "object",
            "properties": {
                "huge_enum": { "enum": many_values },
                "long_literal": { "const": "x".repeat(400) },
                "cycle": { "$ref": "#/$defs/A" },
                "bad_type": { "type": "strin" },
                "type_number": { "type": 5 },
                "no_types": { "type": [] },
                "bad_enum": { "enum": "x" },
                "bad_ref": { "$ref": 5 },
                "bad_items": { "type": "array", "items": 5 },
                "bad_any": { "anyOf": {} },
                "not_schema": "string",
                "wide": { "type": "object", "properties": many_props },
                "comment": { "type": "string", "description": "ends */ early /* and again" },
                "ignored": { "type": "string", "if": { "minLength": 2 }, "then": {}, "x-custom": [1, 2] },
            },
            "required": "deep",
            "$defs": { "A": { "$ref": "#/$defs/B" }, "B": { "$ref": "#/$defs/A" } },
    });
    schema["properties"].as_object_mut().unwrap().insert("deep".into(), nested(500));
    check_schema(
        schema,
        None,
        expect![[r#"
            interface CallOptions {
            	/** Which of the source's connections to use; its default when left out. */
            	connection?: string;
            }

            declare const t: {
            	/** A tool. */
            	tool0(input?: {
            		huge_enum?: string /* one of 10000 values */;
            		long_literal?: string /* one fixed value */;
            		cycle?: unknown /* circular $ref */;
            		bad_type?: unknown /* unknown type `strin` */;
            		type_number?: unknown /* type is a number */;
            		no_types?: unknown /* type is not a list of type names */;
            		bad_enum?: unknown /* enum is a string, not a list */;
            		bad_ref?: unknown /* $ref is a number */;
            		bad_items?: unknown /* not a schema: a number */[];
            		bad_any?: unknown /* anyOf is an object, not a list */;
            		not_schema?: unknown /* not a schema: a string */;
            		wide?: t.Tool0InputWide;
            		/** ends *\/ early /* and again */
            		comment?: string;
            		ignored?: string;
            		deep?: t.Tool0InputDeep;
            	}, options?: CallOptions): Promise<unknown>;
            };

            // Names such as t.Tool0InputWide stand for types not shown here: describe them by name.
        "#]],
    );
}

#[test]
fn non_object_roots() {
    let catalog = schema_catalog(vec![
        (json!({ "type": "string" }), Some(json!({ "type": "array", "items": { "type": "string" } }))),
        (json!(true), Some(json!(false))),
        (
            json!({ "anyOf": [{ "type": "object", "properties": { "a": { "type": "string" } }, "required": ["a"] }, { "type": "object", "properties": { "b": { "type": "string" } }, "required": ["b"] }] }),
            None,
        ),
        (
            json!({ "$ref": "#/$defs/In", "$defs": { "In": { "type": "object", "properties": { "q": { "type": "string" } }, "required": ["q"] } } }),
            None,
        ),
    ]);
    expect![[r#"
        interface CallOptions {
        	/** Which of the source's connections to use; its default when left out. */
        	connection?: string;
        }

        declare const t: {
        	/** A tool. */
        	tool0(input: unknown /* the input schema is not an object */, options?: CallOptions): Promise<string[]>;
        	/** A tool. */
        	tool1(input?: { [key: string]: unknown }, options?: CallOptions): Promise<never>;
        	/** A tool. */
        	tool2(input: { a: string } | { b: string }, options?: CallOptions): Promise<unknown>;
        	/** A tool. */
        	tool3(input: { q: string }, options?: CallOptions): Promise<unknown>;
        };
    "#]].assert_eq(&described(&catalog, &["t"], BUDGET));
}

#[test]
fn references_that_fan_out_stay_bounded() {
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = json!({ "$ref": format!("#/$defs/D{}", i + 1) });
        defs.insert(format!("D{i}"), json!({ "type": "object", "properties": { "a": next, "b": next } }));
    }
    defs.insert("D40".into(), json!({ "type": "string" }));
    let catalog = schema_catalog(vec![(
        json!({ "type": "object", "properties": { "root": { "$ref": "#/$defs/D0" } }, "$defs": defs }),
        None,
    )]);
    for budget in [200, 2_500, 20_000] {
        let text = described(&catalog, &["t.tool0"], budget);
        assert!(text.contains("tool0"), "{text}");
    }
}

#[test]
fn every_real_tool_and_namespace_parses_at_every_budget() {
    let catalog = real_catalog();
    for (address, tool) in catalog.tools() {
        let target = address.to_string();
        described(&catalog, &[&target], BUDGET);
        let line = signature_line(&address, tool);
        assert!(line.chars().count() <= 300, "{line}");
        assert_signature_parses(&line);
    }
    for source in &catalog.sources {
        let ns = source.manifest.namespace.to_string();
        for budget in [150, 400, 800, 1_500, 2_500, 5_000, 50_000] {
            described(&catalog, &[&ns], budget);
        }
    }
}

/// A signature line parses once its address becomes a method name and its elisions go.
fn assert_signature_parses(line: &str) {
    let open = line.find('(').expect("a parameter list");
    let method = line[..open].rsplit('.').next().unwrap();
    let body = line[open..].replace("{ … }", "{}").replace("; … }", " }");
    assert_parses(&format!("declare const ns: {{ {method}{body} }};\n"));
}

#[test]
fn wrong_target_counts_are_errors() {
    let catalog = real_catalog();
    expect![[r#"describe takes 1 to 10 targets, got 0: pass tool addresses, namespaces or type names, for example ["github.createIssue"]"#]].assert_eq(&run(&catalog, &[], BUDGET).unwrap_err().to_string());
    let eleven = ["memory"; 11];
    expect![[r#"describe takes 1 to 10 targets, got 11: pass tool addresses, namespaces or type names, for example ["github.createIssue"]"#]].assert_eq(&run(&catalog, &eleven, BUDGET).unwrap_err().to_string());
}

#[test]
fn unknown_targets_name_the_closest() {
    let catalog = real_catalog();
    let check_error = |targets: &[&str], expect: Expect| {
        expect.assert_eq(&run(&catalog, targets, BUDGET).unwrap_err().to_string());
    };
    check_error(
        &["githb.createIssue"],
        expect![
            "unknown target `githb.createIssue` (closest: github.createIssue, github.updateIssue, github.getIssue): describe a tool address from search results, a namespace, or a type named in an earlier declaration"
        ],
    );
    check_error(
        &["github.issues"],
        expect![
            "unknown target `github.issues` (closest: github.listIssues, github.searchIssues, github.getIssue): describe a tool address from search results, a namespace, or a type named in an earlier declaration"
        ],
    );
    check_error(
        &["memory.Entity", "slack"],
        expect![
            "unknown targets `memory.Entity` (closest: memory, memory.openNodes, memory.readGraph), `slack` (nothing close): describe a tool address from search results, a namespace, or a type named in an earlier declaration"
        ],
    );
    check_error(
        &["", "memory.readGraph.x"],
        expect![
            "unknown targets `` (nothing close), `memory.readGraph.x` (closest: memory.readGraph, memory.ReadGraphResult, memory.searchNodes): describe a tool address from search results, a namespace, or a type named in an earlier declaration"
        ],
    );
}

#[test]
fn upstream_names_are_accepted() {
    let catalog = real_catalog();
    assert_eq!(
        described(&catalog, &["github.create_issue"], BUDGET),
        described(&catalog, &["github.createIssue"], BUDGET)
    );
}

#[test]
fn hidden_tools_are_unknown() {
    let catalog = real_catalog();
    let hide_writes = |a: &ToolAddress| !(a.namespace.as_str() == "memory" && a.tool.starts_with("delete"));
    let targets = |t: &[&str]| t.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let err = describe(&catalog, &targets(&["memory.deleteEntities"]), &hide_writes, BUDGET).unwrap_err();
    expect!["unknown target `memory.deleteEntities` (closest: memory.createEntities, memory.CreateEntitiesResult, memory.createRelations): describe a tool address from search results, a namespace, or a type named in an earlier declaration"].assert_eq(&err.to_string());
    let text = describe(&catalog, &targets(&["memory"]), &hide_writes, BUDGET).unwrap();
    assert!(!text.contains("delete"), "{text}");
    let nothing = |_: &ToolAddress| false;
    let err =
        describe(&catalog, &targets(&["memory", "memory.ReadGraphResult"]), &nothing, BUDGET).unwrap_err();
    expect!["unknown targets `memory` (nothing close), `memory.ReadGraphResult` (nothing close): describe a tool address from search results, a namespace, or a type named in an earlier declaration"].assert_eq(&err.to_string());
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;

    /// Values shaped like JSON Schemas, including the odd and the wrong.
    fn schema() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!({})),
            Just(json!(5)),
            Just(json!("text")),
            Just(json!(null)),
            prop::sample::select(vec![
                "string", "number", "integer", "boolean", "null", "object", "array", "odd"
            ])
            .prop_map(|t| json!({ "type": t })),
            any::<i64>().prop_map(|n| json!({ "const": n, "minimum": n })),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!({ "enum": [f, -f] })),
            "\\PC{0,12}"
                .prop_map(|s| json!({ "enum": [s.clone(), null], "description": s.clone(), "default": s })),
            prop::sample::select(vec![
                "#",
                "#/$defs/A",
                "#/$defs/B",
                "#/definitions/x",
                "#/properties/a",
                "http://x",
                "#/nope",
                "#/$defs/A%20"
            ])
            .prop_map(|r| json!({ "$ref": r })),
        ];
        leaf.prop_recursive(6, 48, 5, |inner| {
            prop_oneof![
                (prop::collection::vec(("[a-z$ *\\/-]{0,5}", inner.clone()), 0..5), any::<bool>()).prop_map(
                    |(props, closed)| {
                        let required: Vec<Value> = props.iter().take(2).map(|(k, _)| json!(k)).collect();
                        let properties: Map<String, Value> = props.into_iter().collect();
                        json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": !closed })
                    }
                ),
                inner.clone().prop_map(|i| json!({ "type": "array", "items": i })),
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "anyOf": v })),
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "oneOf": v, "nullable": true })),
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({ "allOf": v })),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|v| json!({ "prefixItems": v, "items": false })),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| {
                    json!({ "type": "object", "additionalProperties": a, "patternProperties": { "^x": b }, "propertyNames": { "pattern": "^x" } })
                }),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({ "$defs": { "A": a, "B": b }, "$ref": "#/$defs/A", "title": "Thing" })),
                (inner.clone(), any::<bool>()).prop_map(|(a, n)| {
                    json!({ "type": ["object", "null"], "properties": { "p": a }, "nullable": n, "default": [1, "*/"] })
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn declarations_always_parse(
            input in schema(),
            output in proptest::option::of(schema()),
            other in schema(),
            budget in 150usize..4_000,
        ) {
            let catalog = schema_catalog(vec![(input, output), (other.clone(), Some(other))]);
            for targets in [&["t"][..], &["t.tool0"], &["t.tool1", "t.tool0"]] {
                let text = described(&catalog, targets, budget);
                // Every type the answer names can be described on its own.
                for word in text.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '_')) {
                    if let Some(name) = word.strip_prefix("t.").filter(|n| n.starts_with(char::is_uppercase)) {
                        described(&catalog, &[&format!("t.{name}")], budget);
                    }
                }
            }
            for (address, tool) in catalog.tools() {
                let line = signature_line(&address, tool);
                prop_assert!(line.chars().count() <= 300, "{}", line);
                assert_signature_parses(&line);
            }
        }
    }
}

#[test]
fn namespaces_named_like_typescript_words_parse() {
    // `readonly`, `keyof`, `unique` and `infer` open a type operator, so `Namespace::new`
    // reserves them; every namespace it accepts must parse.
    for operator in ["readonly", "keyof", "unique", "infer"] {
        assert!(Namespace::new(operator).is_err(), "{operator} must be reserved");
    }
    let words = [
        "type",
        "any",
        "global",
        "declare",
        "namespace",
        "readonly",
        "keyof",
        "unique",
        "infer",
        "is",
        "asserts",
        "abstract",
        "satisfies",
        "accessor",
        "out",
        "override",
        "never",
        "unknown",
        "symbol",
        "object",
        "as",
        "from",
        "require",
    ];
    for ns in words {
        let Ok(namespace) = Namespace::new(ns) else { continue };
        let entries = vec![json!({
            "name": "get",
            "inputSchema": { "type": "object", "properties": { "q": { "type": "string" } } },
            "outputSchema": { "title": "Thing", "type": "object" },
        })];
        let (manifest, _) = Manifest::from_tools_list(namespace, &entries);
        let catalog = Catalog::new(vec![source(manifest)]);
        let text = run(&catalog, &[ns], BUDGET).unwrap();
        assert_parses(&text);
    }
}
