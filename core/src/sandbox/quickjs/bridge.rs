//! The host end of the prelude: the functions handed to its `install` (tool calls, as plain
//! values or as JSON text, hub lookups, console lines, a namespace's tools) and the state they
//! fill for the driver loop. They are built with the guest, ahead of the attempt; the attempt
//! then gives the state its namespaces and log budget with [`GuestBridge::begin`].
//!
//! None of them does anything but record: a call or lookup becomes a [`GuestRequest`] the driver
//! forwards to the [`crate::sandbox::Bridge`] between JavaScript segments, so no host code
//! runs while guest code is on the stack.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rquickjs::{Ctx, Exception, Function, Object};
use serde_json::Value;

use super::plain;
use crate::sandbox::{GuestCall, GuestNamespace};

/// A lookup the guest made with `hub.search`, `hub.describe`, `hub.read` or `hub.skill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LookupKind {
    Search,
    Describe,
    /// A slice of a handle: answered asynchronously, as the host reads its store.
    Read,
    /// A file of a skill: answered asynchronously too.
    Skill,
}

/// Something the guest asked the host for; `ticket` names the promise that waits for it.
#[derive(Debug)]
pub(crate) enum GuestRequest {
    Call { ticket: u32, call: GuestCall },
    Lookup { ticket: u32, kind: LookupKind, args: Value },
}

/// Console lines kept within a byte budget.
#[derive(Debug, Default)]
pub(crate) struct Logs {
    pub(crate) lines: Vec<String>,
    pub(crate) truncated: bool,
    remaining: usize,
}

impl Logs {
    /// Keeps `line` if it fits (each line costs its bytes plus one for the newline); keeps the
    /// part that fits of the first line that does not, and drops the rest. Returns the bytes
    /// still free.
    fn push(&mut self, line: &str) -> usize {
        let cost = line.len() + 1;
        if cost <= self.remaining {
            self.lines.push(line.to_owned());
            self.remaining -= cost;
        } else {
            self.truncated = true;
            if self.remaining > 1 {
                let cut = line.floor_char_boundary(self.remaining - 1);
                self.lines.push(line[..cut].to_owned());
            }
            self.remaining = 0;
        }
        self.remaining
    }
}

/// State the host functions share with the driver.
#[derive(Debug)]
pub(crate) struct GuestBridge {
    /// The attempt's namespaces and their tools, handed to the guest one namespace at a time.
    namespaces: RefCell<Vec<GuestNamespace>>,
    /// Namespaces built into this guest ahead of its attempt (the prelude's `premake`).
    premade: RefCell<Vec<GuestNamespace>>,
    /// The names of the namespaces the guest has used, in the order it first used them.
    touched: RefCell<Vec<String>>,
    requests: RefCell<Vec<GuestRequest>>,
    next_ticket: Cell<u32>,
    next_seq: Cell<u32>,
    logs: RefCell<Logs>,
}

impl GuestBridge {
    /// State for a guest not yet given to an attempt: no namespaces, no room for logs.
    pub(crate) fn new() -> Rc<GuestBridge> {
        Rc::new(GuestBridge {
            namespaces: RefCell::new(Vec::new()),
            premade: RefCell::new(Vec::new()),
            touched: RefCell::new(Vec::new()),
            requests: RefCell::new(Vec::new()),
            next_ticket: Cell::new(0),
            next_seq: Cell::new(0),
            logs: RefCell::new(Logs::default()),
        })
    }

    /// Gives the attempt's namespaces and log budget, before any of its code runs; returns the
    /// namespaces' names, for the prelude's configuration.
    pub(crate) fn begin(&self, log_budget_bytes: usize, namespaces: Vec<GuestNamespace>) -> Vec<String> {
        let names = namespaces.iter().map(|ns| ns.name.clone()).collect();
        *self.namespaces.borrow_mut() = namespaces;
        *self.logs.borrow_mut() = Logs { remaining: log_budget_bytes, ..Logs::default() };
        names
    }

    /// Notes that `namespace` was built into the guest ahead of its attempt.
    pub(crate) fn premade(&self, namespace: GuestNamespace) {
        self.premade.borrow_mut().push(namespace);
    }

    /// The names of the namespaces built into the guest ahead of its attempt.
    pub(crate) fn premade_names(&self) -> Vec<String> {
        self.premade.borrow().iter().map(|ns| ns.name.clone()).collect()
    }

    /// Takes the attempt's namespaces that the guest used, with their tools, once the guest
    /// will run no more.
    pub(crate) fn take_touched(&self) -> Vec<GuestNamespace> {
        let mut namespaces = std::mem::take(&mut *self.namespaces.borrow_mut());
        let touched = self.touched.borrow();
        namespaces.retain(|ns| touched.contains(&ns.name));
        namespaces
    }

    /// Requests made since the last call, in the order the guest made them.
    pub(crate) fn take_requests(&self) -> Vec<GuestRequest> {
        std::mem::take(&mut *self.requests.borrow_mut())
    }

    pub(crate) fn take_logs(&self) -> Logs {
        std::mem::take(&mut *self.logs.borrow_mut())
    }

    /// Records a tool call; returns its ticket.
    fn call(&self, address: String, args: Value, options: Value) -> u32 {
        let seq = self.next_seq.get();
        self.next_seq.set(seq.saturating_add(1));
        let ticket = self.ticket();
        self.requests
            .borrow_mut()
            .push(GuestRequest::Call { ticket, call: GuestCall { seq, address, args, options } });
        ticket
    }

    fn ticket(&self) -> u32 {
        let ticket = self.next_ticket.get();
        self.next_ticket.set(ticket.wrapping_add(1));
        ticket
    }

    /// The object handed to the prelude's `install`: `{ call, callPlain, lookup, log, tools }`,
    /// and the realm its plain values are read against (read here, before any guest code).
    pub(crate) fn object<'js>(
        self: &Rc<Self>,
        ctx: &Ctx<'js>,
    ) -> rquickjs::Result<(Object<'js>, plain::Realm)> {
        let host = Object::new(ctx.clone())?;

        let this = Rc::clone(self);
        let call = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, address: String, args: String, options: String| -> rquickjs::Result<u32> {
                let args: Value = parse_json(&ctx, &args, "tool arguments")?;
                // Most calls pass no options, which the prelude sends as `{}`.
                let options: Value = match options.as_str() {
                    "{}" => Value::Object(serde_json::Map::new()),
                    _ => parse_json(&ctx, &options, "call options")?,
                };
                Ok(this.call(address, args, options))
            },
        )?;
        host.set("call", call)?;

        // The same call with its arguments and options as the guest's values: taken when both
        // are plain data (see `plain`), else -1 and the prelude sends them as text through `call`.
        let this = Rc::clone(self);
        let realm = plain::Realm::new(ctx)?;
        let call_plain = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  address: String,
                  args: rquickjs::Value<'js>,
                  options: rquickjs::Value<'js>|
                  -> f64 {
                let Some(args) = plain::read(&ctx, &realm, &args) else { return -1.0 };
                let Some(options) = plain::read(&ctx, &realm, &options) else { return -1.0 };
                f64::from(this.call(address, args, options))
            },
        )?;
        host.set("callPlain", call_plain)?;

        let this = Rc::clone(self);
        let lookup = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, kind: String, args: String| -> rquickjs::Result<u32> {
                let kind = match kind.as_str() {
                    "search" => LookupKind::Search,
                    "describe" => LookupKind::Describe,
                    "read" => LookupKind::Read,
                    "skill" => LookupKind::Skill,
                    _ => return Err(Exception::throw_type(&ctx, "unknown hub lookup")),
                };
                let args: Value = parse_json(&ctx, &args, "hub arguments")?;
                let ticket = this.ticket();
                this.requests.borrow_mut().push(GuestRequest::Lookup { ticket, kind, args });
                Ok(ticket)
            },
        )?;
        host.set("lookup", lookup)?;

        let this = Rc::clone(self);
        let log = Function::new(ctx.clone(), move |line: String| -> f64 {
            // Budgets are far below 2^53, so the conversion is exact.
            this.logs.borrow_mut().push(&line) as f64
        })?;
        host.set("log", log)?;

        // A namespace's tool names, asked once, the first time the guest uses that namespace;
        // also how `premake` gets them. JSON text: the guest's realm may have tampered with how
        // arrays are filled. Empty when the namespace was built ahead with these very tools.
        let this = Rc::clone(self);
        let tools = Function::new(ctx.clone(), move |name: String| -> String {
            let namespaces = this.namespaces.borrow();
            let Some(namespace) = namespaces.iter().find(|ns| ns.name == name) else {
                return "[]".to_owned();
            };
            let mut touched = this.touched.borrow_mut();
            if !touched.contains(&name) {
                touched.push(name);
            }
            if this.premade.borrow().contains(namespace) {
                return String::new();
            }
            serde_json::to_string(&namespace.tools).unwrap_or_else(|_| "[]".to_owned())
        })?;
        host.set("tools", tools)?;

        Ok((host, realm))
    }
}

fn parse_json(ctx: &Ctx<'_>, text: &str, what: &str) -> rquickjs::Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| Exception::throw_type(ctx, &format!("{what} are not valid JSON for the host: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_keep_whole_lines_then_the_part_that_fits() {
        let mut logs = Logs { remaining: 12, ..Logs::default() };
        assert_eq!(logs.push("hello"), 6);
        assert_eq!(logs.push("wörld!"), 0);
        assert_eq!(logs.push("more"), 0);
        assert_eq!(logs.lines, ["hello", "wörl"]);
        assert!(logs.truncated);
    }
}
