//! The command line: clap types as data, resolved into [`Settings`] before any command runs.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::commands;
use crate::error::report_error;
use crate::settings::{GlobalArgs, Settings};

/// One MCP endpoint for every tool your agents use.
#[derive(Debug, Parser)]
#[command(name = "capabilities", version = crate::install::VERSION, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run and manage the local hub.
    #[command(subcommand)]
    Hub(HubCommand),
    /// Restore the harness configs the hub changed last (`hub connect`, `hub disconnect`).
    Rollback(commands::rollback::RollbackArgs),
    /// The census: the hub's sources and skills, and each harness on this machine — whether it
    /// points at the hub and which servers it still runs itself.
    List(commands::census::CensusArgs),
    /// Check the hub, its sources and secrets, and every harness's entry (as `hub doctor`).
    Doctor(commands::doctor::DoctorArgs),
    /// Keep your stack in a git repository and apply it on another machine; add or remove one
    /// capability from a registry index.
    Stack(commands::stack::StackArgs),
    /// Serve one of the example MCP servers `hub demo` uses, over stdio.
    // Named `example-server` for good: the demo's stored source records run it by that name.
    #[command(name = "example-server", hide = true)]
    DemoServer {
        #[arg(value_enum)]
        which: crate::demo_servers::DemoServer,
    },
    /// Print what the site's reference pages are generated from, as JSON (`cargo xtask site`).
    #[command(name = "docs-data", hide = true)]
    DocsData,
}

#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Watch a whole task run through the hub, in a throwaway hub with two example sources.
    Demo(commands::demo::DemoArgs),
    /// Create the hub; with `--import`, import your harnesses' servers and connect them too.
    Init(commands::init::InitArgs),
    /// Read your harnesses' MCP servers and add them as sources.
    Import(commands::import::ImportArgs),
    /// Point your harnesses at the hub: one `capabilities` entry in each.
    Connect(commands::connect::ConnectArgs),
    /// Remove the hub's entry from your harnesses.
    Disconnect(commands::disconnect::DisconnectArgs),
    /// Call one tool from the terminal, through policy.
    Call(commands::call::CallArgs),
    /// Check the hub's files, every source and the connected harnesses.
    Doctor(commands::doctor::DoctorArgs),
    /// Run JavaScript through the hub's sandbox, as `execute` would, and print the envelope.
    Exec(commands::exec::ExecArgs),
    /// List runs, or show one.
    Runs(commands::runs::RunsArgs),
    /// Serve the hub's MCP endpoint (`search`, `describe`, `execute`) to an agent.
    Serve(commands::serve::ServeArgs),
    /// Add a source from a URL, or a local command line after `--`, then review its tools.
    Add(Box<commands::add::AddArgs>),
    /// List the sources, with their transport, tool count and connections.
    List(commands::list::ListArgs),
    /// Remove a source with its manifest, connections and policy entries.
    Remove(commands::remove::RemoveArgs),
    /// Read tool lists again and show what changed upstream.
    Refresh(commands::refresh::RefreshArgs),
    /// Decide the tools that are new or changed since they were accepted.
    Review(commands::review::ReviewArgs),
    /// Named profiles: which sources and tools an endpoint serves, with rules that tighten.
    Profiles(commands::profiles::ProfilesArgs),
    /// The hub's skill library: add, list, show and remove skills (folders with a SKILL.md).
    Skills(commands::skills::SkillsArgs),
    /// Open the local dashboard: calls waiting for you, tools to review, runs, sources.
    Dashboard(commands::dashboard::DashboardArgs),
    /// Decide the calls a run waits for, then resume it.
    Approve(commands::approve::ApproveArgs),
    /// Cancel a run.
    Cancel(commands::cancel::CancelArgs),
    /// Fill the credential slots of a source's connection (values go to the keychain).
    Auth(commands::auth::AuthArgs),
    /// List a source's connections, their slots and which are filled.
    Connections(commands::connections::ConnectionsArgs),
    /// Sign in to a hosted hub (https://hub.capabilities.sh unless `--hub`).
    Login(commands::login::LoginArgs),
    /// Send this hub's sources and policy to the hosted hub, after showing the plan.
    Push(commands::push::PushArgs),
    /// Show the hosted hub: account, last push, each source's health, calls waiting for you.
    Status(commands::status::StatusArgs),
    /// Sign out of the hosted hub and delete its tokens here.
    Logout(commands::logout::LogoutArgs),
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match Settings::resolve(&cli.global) {
        Ok(settings) => settings,
        Err(err) => return report_error(&err),
    };
    let result = match cli.command {
        Command::Rollback(args) => commands::rollback::run(&settings, args),
        Command::List(args) => commands::census::run(&settings, args),
        Command::Doctor(args) => commands::doctor::run(&settings, args),
        Command::Stack(args) => commands::stack::run(&settings, args),
        Command::DemoServer { which } => crate::demo_servers::serve(which).map(|()| ExitCode::SUCCESS),
        Command::DocsData => commands::docs_data::run(),
        Command::Hub(HubCommand::Demo(args)) => commands::demo::run(&settings, args),
        Command::Hub(HubCommand::Init(args)) => commands::init::run(&settings, args),
        Command::Hub(HubCommand::Import(args)) => commands::import::run(&settings, args),
        Command::Hub(HubCommand::Connect(args)) => commands::connect::run(&settings, args),
        Command::Hub(HubCommand::Disconnect(args)) => commands::disconnect::run(&settings, args),
        Command::Hub(HubCommand::Call(args)) => commands::call::run(&settings, args),
        Command::Hub(HubCommand::Doctor(args)) => commands::doctor::run(&settings, args),
        Command::Hub(HubCommand::Exec(args)) => commands::exec::run(&settings, args),
        Command::Hub(HubCommand::Runs(args)) => commands::runs::run(&settings, args),
        Command::Hub(HubCommand::Profiles(args)) => commands::profiles::run(&settings, args),
        Command::Hub(HubCommand::Skills(args)) => commands::skills::run(&settings, args),
        Command::Hub(HubCommand::Serve(args)) => commands::serve::run(&settings, args),
        Command::Hub(HubCommand::Add(args)) => commands::add::run(&settings, *args),
        Command::Hub(HubCommand::List(args)) => commands::list::run(&settings, args),
        Command::Hub(HubCommand::Remove(args)) => commands::remove::run(&settings, args),
        Command::Hub(HubCommand::Refresh(args)) => commands::refresh::run(&settings, args),
        Command::Hub(HubCommand::Review(args)) => commands::review::run(&settings, args),
        Command::Hub(HubCommand::Dashboard(args)) => commands::dashboard::run(&settings, args),
        Command::Hub(HubCommand::Approve(args)) => commands::approve::run(&settings, args),
        Command::Hub(HubCommand::Cancel(args)) => commands::cancel::run(&settings, args),
        Command::Hub(HubCommand::Auth(args)) => commands::auth::run(&settings, args),
        Command::Hub(HubCommand::Connections(args)) => commands::connections::run(&settings, args),
        Command::Hub(HubCommand::Login(args)) => commands::login::run(&settings, args),
        Command::Hub(HubCommand::Push(args)) => commands::push::run(&settings, args),
        Command::Hub(HubCommand::Status(args)) => commands::status::run(&settings, args),
        Command::Hub(HubCommand::Logout(args)) => commands::logout::run(&settings, args),
    };
    match result {
        Ok(code) => code,
        Err(err) => report_error(&err),
    }
}
