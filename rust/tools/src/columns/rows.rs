//! The rows a file's pass writes beyond its envelopes: a message's (a message
//! line's or a replacement message's), a compaction summary's, the columns
//! replay decides, and, once every envelope is read, the file's
//! `tool_operations` rows and its `sessions` row.

use transcript_core::json::JsonError;
use transcript_core::scan::ReadAt;
use transcript_core::transcript::{Source, WHOLE};

use super::pass::{FileState, NOT_LIVE};
use super::payload::{content_text, items_of, members, slice, string_of, MessageFields};
use super::{Batch, Input};

impl FileState {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn message<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
        line_no: i64,
        id: Option<&[u8]>,
        ts: Option<i64>,
        source: &str,
        text: &str,
        fields: MessageFields,
    ) -> Result<(), JsonError> {
        let m = &mut batch.messages;
        m.session.push_wtf8(&self.session);
        m.line.push_i64(Some(line_no));
        m.id.push_opt(id);
        m.source.push_str(source);
        m.part.push_i64((at.part != WHOLE).then_some(i64::from(at.part)));
        m.ts.push_i64(ts);
        m.role.push_opt(fields.role.as_deref());
        m.name.push_opt(fields.name.as_deref());
        m.tool_call_id.push_opt(fields.tool_call_id.as_deref());
        // The content's text is already at the end of the column's data.
        let row_start = m.text.row_start();
        match (fields.has_text, fields.text_wtf8) {
            (false, _) => {
                m.text.data.truncate(row_start);
                m.text.push_null();
            }
            (true, true) => {
                let wtf8 = m.text.data.split_off(row_start);
                m.text.push_wtf8(&wtf8);
            }
            (true, false) => m.text.end_row(),
        }
        let calls = match fields.tool_calls {
            Some(at) => {
                let v = slice(text, at);
                Some((v, items_of(v)?))
            }
            None => None,
        };
        match &calls {
            Some((v, items)) if v.starts_with('[') => {
                for &item in items {
                    let call = slice(v, item);
                    let s = members(call, &["id", "function"])?;
                    let cid = match s[0] {
                        Some(x) => {
                            string_of(slice(call, x), &mut self.scratch)?.map(<[u8]>::to_vec)
                        }
                        None => None,
                    };
                    m.tool_call_ids.items.push_opt(cid.as_deref());
                    let name = match s[1] {
                        Some(f) => {
                            let f = slice(call, f);
                            match members(f, &["name"])?[0] {
                                Some(n) => {
                                    string_of(slice(f, n), &mut self.scratch)?.map(<[u8]>::to_vec)
                                }
                                None => None,
                            }
                        }
                        None => None,
                    };
                    m.tool_call_names.items.push_opt(name.as_deref());
                }
                m.tool_call_ids.end(true);
                m.tool_call_names.end(true);
            }
            _ => {
                m.tool_call_ids.end(false);
                m.tool_call_names.end(false);
            }
        }
        m.sticky.push(Some(fields.sticky));
        self.replayed_columns(batch, from, at);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn summary<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
        line_no: i64,
        id: Option<&[u8]>,
        ts: Option<i64>,
        summary: Option<&str>,
    ) -> Result<(), JsonError> {
        let m = &mut batch.messages;
        m.session.push_wtf8(&self.session);
        m.line.push_i64(Some(line_no));
        m.id.push_opt(id);
        m.source.push_str("summary");
        m.part.push_i64(None);
        m.ts.push_i64(ts);
        m.role.push_str("user");
        m.name.push_null();
        let has_text = match summary {
            Some(v) => content_text(v, &mut self.text)?,
            None => false,
        };
        m.text.push_opt(has_text.then_some(&self.text[..]));
        m.tool_call_id.push_null();
        m.tool_call_ids.end(false);
        m.tool_call_names.end(false);
        m.sticky.push(Some(false));
        self.replayed_columns(batch, from, at);
        Ok(())
    }

    // live, live_position, elided_line, compacted_line, rewound_line: replay's.
    fn replayed_columns<R: ReadAt + ?Sized>(
        &self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
    ) {
        let m = &mut batch.messages;
        let Some(t) = from.replay else {
            m.live.push(None);
            m.live_position.push_i64(None);
            m.elided_line.push_i64(None);
            m.compacted_line.push_i64(None);
            m.rewound_line.push_i64(None);
            return;
        };
        let pos = if at.part == WHOLE {
            self.live_pos.get(at.line as usize).copied().filter(|&p| p != NOT_LIVE)
        } else {
            self.part_pos.get(&at).copied()
        };
        m.live.push(Some(pos.is_some()));
        m.live_position.push_i64(pos.map(i64::from));
        let number = |l: Option<&u32>| {
            l.and_then(|&l| from.index.get(l as usize)).and_then(|r| i64::try_from(r.number).ok())
        };
        let h = t.history.as_ref();
        m.elided_line.push_i64(number(h.and_then(|h| h.elided_by.get(&at))));
        m.compacted_line.push_i64(number(h.and_then(|h| h.compacted_by.get(&at))));
        m.rewound_line.push_i64(number(h.and_then(|h| h.rewound_by.get(&at))));
    }

    /// Adds the file's `tool_operations` rows and its `sessions` row, once
    /// every envelope is read. `status`, `reason`, `size`, `mtime` (µs since
    /// the epoch) and `lines` are what the caller found the file to be.
    #[allow(clippy::too_many_arguments)]
    pub fn finish<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: Input<'_, R>,
        status: &str,
        reason: Option<&str>,
        size: i64,
        mtime: Option<i64>,
        lines: i64,
    ) {
        let number = |l: Option<u32>| {
            l.and_then(|l| from.index.get(l as usize)).and_then(|r| i64::try_from(r.number).ok())
        };
        let o = &mut batch.tool_operations;
        for op in std::mem::take(&mut self.ops) {
            o.session.push_wtf8(&self.session);
            o.op_id.push_opt(op.op_id.as_deref());
            o.call_id.push_opt(op.call_id.as_deref());
            o.tool.push_opt(op.tool.as_deref());
            o.arguments_digest.push_opt(op.arguments_digest.as_deref());
            o.idempotency.push_opt(op.idempotency.as_deref());
            o.run_id.push_opt(op.run_id.as_deref());
            o.round.push_i64(op.round);
            o.dispatch_line.push_i64(number(op.dispatch));
            o.dispatched_ts.push_i64(op.dispatched_ts);
            o.settle_line.push_i64(number(op.settle));
            o.settled_ts.push_i64(op.settled_ts);
            o.outcome.push_opt(op.outcome.as_deref());
            o.reason.push_opt(op.reason.as_deref());
            o.duration.push_f64(op.duration);
            let pending = match (from.replay, op.dispatch) {
                (Some(t), Some(d)) => t.pending.get(&d),
                _ => None,
            };
            let state = match (from.replay, op.dispatch, pending) {
                (None, _, _) => None,
                (Some(_), None, _) => Some("unmatched-settle"),
                (Some(_), Some(_), Some(p)) if p.result.is_some() => Some("result-persisted"),
                (Some(_), Some(_), Some(_)) => Some("dispatched"),
                (Some(_), Some(_), None) => Some("settled"),
            };
            match state {
                Some(s) => o.state.push_str(s),
                None => o.state.push_null(),
            }
            let result = pending.and_then(|p| p.result).and_then(|r| self.result_ids.get(&r));
            o.result_message_id.push_opt(result.map(|v| &v[..]));
        }
        let s = &mut batch.sessions;
        let t = &self.totals;
        s.session.push_wtf8(&self.session);
        s.session_id.push_opt(self.session_id.as_deref());
        s.status.push_str(status);
        match reason {
            Some(r) => s.reason.push_str(r),
            None => s.reason.push_null(),
        }
        s.size.push_i64(Some(size));
        s.mtime.push_i64(mtime);
        s.lines.push_i64(Some(lines));
        s.envelopes.push_i64(Some(t.envelopes));
        s.messages.push_i64(Some(t.messages));
        s.live_messages
            .push_i64(from.replay.map(|r| i64::try_from(r.live.len()).unwrap_or(i64::MAX)));
        s.compactions.push_i64(Some(t.compactions));
        s.elisions.push_i64(Some(t.elisions));
        s.rewinds.push_i64(Some(t.rewinds));
        s.tool_operations.push_i64(Some(t.dispatches));
        s.pending.push_i64(from.replay.map(|r| i64::try_from(r.pending.len()).unwrap_or(i64::MAX)));
        s.first_ts.push_i64(t.first_ts);
        s.last_ts.push_i64(t.last_ts);
        match &t.last_type {
            Some(k) => s.last_type.push_str(k),
            None => s.last_type.push_null(),
        }
        s.agent.push_opt(self.agent.as_deref());
        s.model.push_opt(self.model.as_deref());
        s.meta.push_opt(self.meta.as_deref());
    }
}
