//! The four export tables as columns (their schema order is
//! `columns()`'s), and [`Batch`], the rows of all four gathered so far.

use super::{Bool, Column, Fixed, TextList, Utf8};

/// `sessions`: one row per file.
#[derive(Debug, Default, Clone)]
pub struct Sessions {
    pub session: Utf8,
    pub session_id: Utf8,
    pub status: Utf8,
    pub reason: Utf8,
    pub size: Fixed,
    pub mtime: Fixed,
    pub lines: Fixed,
    pub envelopes: Fixed,
    pub messages: Fixed,
    pub live_messages: Fixed,
    pub compactions: Fixed,
    pub elisions: Fixed,
    pub rewinds: Fixed,
    pub tool_operations: Fixed,
    pub pending: Fixed,
    pub first_ts: Fixed,
    pub last_ts: Fixed,
    pub last_type: Utf8,
    pub agent: Utf8,
    pub model: Utf8,
    pub meta: Utf8,
}

/// `envelopes`: one row per envelope (every line that is one).
#[derive(Debug, Default, Clone)]
pub struct Envelopes {
    pub session: Utf8,
    pub line: Fixed,
    pub id: Utf8,
    pub r#type: Utf8,
    pub ts: Fixed,
    pub bytes: Fixed,
    pub payload: Utf8,
}

/// `messages`: one row per message line, compaction summary and replacement message.
#[derive(Debug, Default, Clone)]
pub struct Messages {
    pub session: Utf8,
    pub line: Fixed,
    pub id: Utf8,
    pub source: Utf8,
    pub part: Fixed,
    pub ts: Fixed,
    pub role: Utf8,
    pub name: Utf8,
    pub text: Utf8,
    pub tool_call_id: Utf8,
    pub tool_call_ids: TextList,
    pub tool_call_names: TextList,
    pub sticky: Bool,
    pub live: Bool,
    pub live_position: Fixed,
    pub elided_line: Fixed,
    pub compacted_line: Fixed,
    pub rewound_line: Fixed,
}

/// `tool_operations`: one row per dispatched operation, plus one per settle
/// line that settles none (an unknown or already settled operation).
#[derive(Debug, Default, Clone)]
pub struct ToolOperations {
    pub session: Utf8,
    pub op_id: Utf8,
    pub call_id: Utf8,
    pub tool: Utf8,
    pub arguments_digest: Utf8,
    pub idempotency: Utf8,
    pub run_id: Utf8,
    pub round: Fixed,
    pub dispatch_line: Fixed,
    pub dispatched_ts: Fixed,
    pub settle_line: Fixed,
    pub settled_ts: Fixed,
    pub outcome: Utf8,
    pub reason: Utf8,
    pub duration: Fixed,
    pub state: Utf8,
    pub result_message_id: Utf8,
}

impl Sessions {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("session_id", Text(&mut self.session_id)),
            ("status", Text(&mut self.status)),
            ("reason", Text(&mut self.reason)),
            ("size", Int(&mut self.size)),
            ("mtime", Timestamp(&mut self.mtime)),
            ("lines", Int(&mut self.lines)),
            ("envelopes", Int(&mut self.envelopes)),
            ("messages", Int(&mut self.messages)),
            ("live_messages", Int(&mut self.live_messages)),
            ("compactions", Int(&mut self.compactions)),
            ("elisions", Int(&mut self.elisions)),
            ("rewinds", Int(&mut self.rewinds)),
            ("tool_operations", Int(&mut self.tool_operations)),
            ("pending", Int(&mut self.pending)),
            ("first_ts", Timestamp(&mut self.first_ts)),
            ("last_ts", Timestamp(&mut self.last_ts)),
            ("last_type", Text(&mut self.last_type)),
            ("agent", Text(&mut self.agent)),
            ("model", Text(&mut self.model)),
            ("meta", Text(&mut self.meta)),
        ]
    }
}

impl Envelopes {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("line", Int(&mut self.line)),
            ("id", Text(&mut self.id)),
            ("type", Text(&mut self.r#type)),
            ("ts", Timestamp(&mut self.ts)),
            ("bytes", Int(&mut self.bytes)),
            ("payload", Text(&mut self.payload)),
        ]
    }
}

impl Messages {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("line", Int(&mut self.line)),
            ("id", Text(&mut self.id)),
            ("source", Text(&mut self.source)),
            ("part", Int(&mut self.part)),
            ("ts", Timestamp(&mut self.ts)),
            ("role", Text(&mut self.role)),
            ("name", Text(&mut self.name)),
            ("text", Text(&mut self.text)),
            ("tool_call_id", Text(&mut self.tool_call_id)),
            ("tool_call_ids", TextList(&mut self.tool_call_ids)),
            ("tool_call_names", TextList(&mut self.tool_call_names)),
            ("sticky", Bool(&mut self.sticky)),
            ("live", Bool(&mut self.live)),
            ("live_position", Int(&mut self.live_position)),
            ("elided_line", Int(&mut self.elided_line)),
            ("compacted_line", Int(&mut self.compacted_line)),
            ("rewound_line", Int(&mut self.rewound_line)),
        ]
    }
}

impl ToolOperations {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("op_id", Text(&mut self.op_id)),
            ("call_id", Text(&mut self.call_id)),
            ("tool", Text(&mut self.tool)),
            ("arguments_digest", Text(&mut self.arguments_digest)),
            ("idempotency", Text(&mut self.idempotency)),
            ("run_id", Text(&mut self.run_id)),
            ("round", Int(&mut self.round)),
            ("dispatch_line", Int(&mut self.dispatch_line)),
            ("dispatched_ts", Timestamp(&mut self.dispatched_ts)),
            ("settle_line", Int(&mut self.settle_line)),
            ("settled_ts", Timestamp(&mut self.settled_ts)),
            ("outcome", Text(&mut self.outcome)),
            ("reason", Text(&mut self.reason)),
            ("duration", Float(&mut self.duration)),
            ("state", Text(&mut self.state)),
            ("result_message_id", Text(&mut self.result_message_id)),
        ]
    }
}

/// The rows of the four tables gathered so far, from one file or many.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub sessions: Sessions,
    pub envelopes: Envelopes,
    pub messages: Messages,
    pub tool_operations: ToolOperations,
}

impl Batch {
    /// About how many bytes the batch holds (its big columns and a guess per row).
    pub fn bytes(&self) -> usize {
        self.envelopes.payload.data.len()
            + self.messages.text.data.len()
            + (self.envelopes.line.valid.len + self.messages.line.valid.len) * 96
    }

    /// Rows in each table: sessions, envelopes, messages, tool operations.
    pub fn rows(&self) -> [usize; 4] {
        [
            self.sessions.session.len(),
            self.envelopes.session.len(),
            self.messages.session.len(),
            self.tool_operations.session.len(),
        ]
    }
}
