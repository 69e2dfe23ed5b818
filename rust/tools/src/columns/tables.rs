//! The four export tables as columns (their schema order is
//! `columns()`'s), and [`Batch`], the rows of all four gathered so far.

use super::{Bool, Column, Fixed, TextList, Utf8};

/// A table: a struct of its columns' buffers, one field each (`name: Buffer
/// as Kind`, Kind a [`Column`] kind; `field = "name"` where the column's name
/// is no Rust name), and `columns()`, which names them in the fields' order,
/// the table's schema order. Each column is written once, so the struct and
/// the schema cannot part.
macro_rules! table {
    ($(#[$doc:meta])* $table:ident {
        $($field:ident $(= $name:literal)?: $buffer:ident as $kind:ident,)*
    }) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone)]
        pub struct $table {
            $(pub $field: $buffer,)*
        }

        impl $table {
            /// The columns, named, in schema order.
            pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
                vec![$(([$($name,)? stringify!($field)][0], Column::$kind(&mut self.$field)),)*]
            }
        }
    };
}

table! {
    /// `sessions`: one row per file.
    Sessions {
        session: Utf8 as Text,
        session_id: Utf8 as Text,
        status: Utf8 as Text,
        reason: Utf8 as Text,
        size: Fixed as Int,
        mtime: Fixed as Timestamp,
        lines: Fixed as Int,
        envelopes: Fixed as Int,
        messages: Fixed as Int,
        live_messages: Fixed as Int,
        compactions: Fixed as Int,
        elisions: Fixed as Int,
        rewinds: Fixed as Int,
        tool_operations: Fixed as Int,
        pending: Fixed as Int,
        first_ts: Fixed as Timestamp,
        last_ts: Fixed as Timestamp,
        last_type: Utf8 as Text,
        agent: Utf8 as Text,
        model: Utf8 as Text,
        meta: Utf8 as Text,
    }
}

table! {
    /// `envelopes`: one row per envelope (every line that is one).
    Envelopes {
        session: Utf8 as Text,
        line: Fixed as Int,
        id: Utf8 as Text,
        r#type = "type": Utf8 as Text,
        ts: Fixed as Timestamp,
        bytes: Fixed as Int,
        payload: Utf8 as Text,
    }
}

table! {
    /// `messages`: one row per message line, compaction summary and replacement message.
    Messages {
        session: Utf8 as Text,
        line: Fixed as Int,
        id: Utf8 as Text,
        source: Utf8 as Text,
        part: Fixed as Int,
        ts: Fixed as Timestamp,
        role: Utf8 as Text,
        name: Utf8 as Text,
        text: Utf8 as Text,
        tool_call_id: Utf8 as Text,
        tool_call_ids: TextList as TextList,
        tool_call_names: TextList as TextList,
        sticky: Bool as Bool,
        live: Bool as Bool,
        live_position: Fixed as Int,
        elided_line: Fixed as Int,
        compacted_line: Fixed as Int,
        rewound_line: Fixed as Int,
    }
}

table! {
    /// `tool_operations`: one row per dispatched operation, plus one per settle
    /// line that settles none (an unknown or already settled operation).
    ToolOperations {
        session: Utf8 as Text,
        op_id: Utf8 as Text,
        call_id: Utf8 as Text,
        tool: Utf8 as Text,
        arguments_digest: Utf8 as Text,
        idempotency: Utf8 as Text,
        run_id: Utf8 as Text,
        round: Fixed as Int,
        dispatch_line: Fixed as Int,
        dispatched_ts: Fixed as Timestamp,
        settle_line: Fixed as Int,
        settled_ts: Fixed as Timestamp,
        outcome: Utf8 as Text,
        reason: Utf8 as Text,
        duration: Fixed as Float,
        state: Utf8 as Text,
        result_message_id: Utf8 as Text,
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
