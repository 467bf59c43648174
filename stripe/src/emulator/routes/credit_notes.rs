//! Credit notes: create (by amount or lines), retrieve, list, void.

use super::{created_filter, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{apply_metadata, Account, CreditNote, CreditNoteLine, Metadata};
use serde_json::Value;

pub(super) fn credit_note<'a>(a: &'a Account, id: &str) -> Result<&'a CreditNote, ApiError> {
    a.credit_notes
        .get(id)
        .ok_or_else(|| ApiError::no_such("credit_note", id, "id"))
}

pub(super) fn create_credit_note(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&[
        "invoice",
        "amount",
        "lines",
        "credit_amount",
        "refund_amount",
        "out_of_band_amount",
        "memo",
        "reason",
        "metadata",
        "effective_at",
        "email_type",
        "expand",
    ])?;
    let inv_id = form.req_str("invoice")?;
    let inv = a.invoice(inv_id, "invoice")?.clone();
    let mut cn_lines: Vec<(i64, Option<String>, Option<String>)> = Vec::new();
    for line in form.list("lines")? {
        line.allow(&[
            "type",
            "invoice_line_item",
            "amount",
            "description",
            "quantity",
        ])?;
        let kind = line.choice("type", &["invoice_line_item", "custom_line_item"])?;
        let Some(kind) = kind else {
            return Err(ApiError::missing(&line.name("type")));
        };
        let amount = match (kind, line.int("amount")?) {
            (_, Some(x)) => x,
            ("invoice_line_item", None) => {
                let item = line.req_str("invoice_line_item")?;
                inv.lines
                    .iter()
                    .find(|l| l.id == item)
                    .map(|l| l.amount)
                    .ok_or_else(|| {
                        ApiError::no_such(
                            "invoice line item",
                            item,
                            &line.name("invoice_line_item"),
                        )
                    })?
            }
            _ => return Err(ApiError::missing(&line.name("amount"))),
        };
        let item = if kind == "invoice_line_item" {
            let item = line.req_str("invoice_line_item")?;
            if !inv.lines.iter().any(|l| l.id == item) {
                return Err(ApiError::no_such(
                    "invoice line item",
                    item,
                    &line.name("invoice_line_item"),
                ));
            }
            Some(item.to_string())
        } else {
            None
        };
        cn_lines.push((amount, line.text("description", 5000)?, item));
    }
    let amount = match (form.int("amount")?, cn_lines.is_empty()) {
        (Some(x), true) => x,
        (None, false) => cn_lines.iter().map(|l| l.0).sum(),
        (Some(x), false) => {
            let sum: i64 = cn_lines.iter().map(|l| l.0).sum();
            if sum != x {
                return Err(ApiError::invalid(
                    "amount",
                    format!("The amount ({x}) must equal the sum of the lines ({sum})."),
                ));
            }
            x
        }
        (None, true) => return Err(ApiError::missing("amount")),
    };
    if amount <= 0 {
        return Err(ApiError::invalid(
            "amount",
            "Invalid amount: a credit note must be for a positive amount",
        ));
    }
    if !matches!(inv.status, "open" | "paid") {
        return Err(ApiError::invalid(
            "invoice",
            format!(
                "Credit notes can only be created on open or paid invoices; {inv_id} is {}.",
                inv.status
            ),
        )
        .executed());
    }
    let creditable =
        inv.total - inv.pre_payment_credit_notes_amount - inv.post_payment_credit_notes_amount;
    if amount > creditable {
        return Err(ApiError::invalid(
            "amount",
            format!(
                "The credit note amount ({amount}) is greater than the amount that can still be \
                 credited on invoice {inv_id} ({creditable})."
            ),
        )
        .executed());
    }
    let credit_amount = form.int("credit_amount")?.unwrap_or(0);
    let refund_amount = form.int("refund_amount")?.unwrap_or(0);
    let oob_amount = form.int("out_of_band_amount")?.unwrap_or(0);
    for (name, v) in [
        ("credit_amount", credit_amount),
        ("refund_amount", refund_amount),
        ("out_of_band_amount", oob_amount),
    ] {
        if v < 0 {
            return Err(ApiError::invalid(
                name,
                format!("Invalid {name}: must be at least 0"),
            ));
        }
    }
    if refund_amount > 0 {
        return Err(ApiError::invalid(
            "refund_amount",
            "The emulator does not model card payments, so it cannot refund; use credit_amount \
             or out_of_band_amount.",
        ));
    }
    let pre = if inv.status == "open" {
        amount.min(inv.amount_remaining)
    } else {
        0
    };
    let post = amount - pre;
    if credit_amount + refund_amount + oob_amount != post {
        return Err(ApiError::invalid(
            if form.has("credit_amount") {
                "credit_amount"
            } else {
                "amount"
            },
            format!(
                "The sum of credit amount, refund amount and out of band amount ({}) must equal \
                 the credit note's post-payment amount ({post}).",
                credit_amount + refund_amount + oob_amount
            ),
        ));
    }
    let memo = form.text("memo", 5000)?;
    let reason = form
        .choice(
            "reason",
            &[
                "duplicate",
                "fraudulent",
                "order_change",
                "product_unsatisfactory",
            ],
        )?
        .map(str::to_string);
    form.choice("email_type", &["credit_note", "none"])?;
    let mut meta = Metadata::new();
    apply_metadata(&mut meta, form.metadata()?);
    let now = a.now_for(&inv.customer);
    let effective_at = form.int("effective_at")?.unwrap_or(now);
    let id = a.new_id("cn");
    let seq = a.next_seq();
    let existing = a
        .credit_notes
        .values()
        .filter(|c| c.invoice == inv_id)
        .count();
    let number = format!(
        "{}-CN-{:02}",
        inv.number.clone().unwrap_or_else(|| inv_id.to_string()),
        existing + 1
    );
    let cbtxn = if credit_amount > 0 {
        Some(a.add_balance_txn(
            &inv.customer,
            -credit_amount,
            &inv.currency,
            "credit_note",
            now,
            Some(inv_id.to_string()),
            Some(id.clone()),
            None,
            Metadata::new(),
        ))
    } else {
        None
    };
    if cn_lines.is_empty() {
        cn_lines.push((amount, memo.clone().or_else(|| Some("Credit".into())), None));
    }
    let mut lines = Vec::new();
    for (amount, description, item) in cn_lines {
        lines.push(CreditNoteLine {
            id: a.new_id("cnli"),
            amount,
            description,
            invoice_line_item: item,
        });
    }
    if let Some(i) = a.invoices.get_mut(inv_id) {
        i.pre_payment_credit_notes_amount += pre;
        i.post_payment_credit_notes_amount += post;
        if pre > 0 {
            i.amount_due -= pre;
            i.amount_remaining -= pre;
            if i.amount_remaining == 0 && i.status == "open" {
                i.status = "paid";
                i.paid_at = Some(now);
            }
        }
    }
    let cn = CreditNote {
        id: id.clone(),
        seq,
        created: now,
        customer: inv.customer.clone(),
        invoice: inv_id.to_string(),
        currency: inv.currency.clone(),
        amount,
        credit_amount,
        out_of_band_amount: oob_amount,
        pre_payment_amount: pre,
        post_payment_amount: post,
        status: "issued",
        kind: match (pre > 0, post > 0) {
            (true, true) => "mixed",
            (true, false) => "pre_payment",
            _ => "post_payment",
        },
        memo,
        reason,
        metadata: meta,
        number,
        customer_balance_transaction: cbtxn,
        voided_at: None,
        effective_at,
        lines,
    };
    let out = render::credit_note(&cn);
    a.credit_notes.insert(id, cn);
    Ok(out)
}

pub(super) fn list_credit_notes(a: &Account, form: &Form<'_>) -> Result<Value, ApiError> {
    form.allow(&with_list(&["customer", "invoice", "created"]))?;
    let customer = form.str("customer")?;
    let invoice = form.str("invoice")?;
    let created = created_filter(form)?;
    let items = newest_first(
        a.credit_notes
            .values()
            .filter(|c| customer.is_none_or(|x| c.customer == x))
            .filter(|c| invoice.is_none_or(|x| c.invoice == x))
            .filter(|c| created.admits(c.created))
            .map(|c| (c.created, c.seq, render::credit_note(c))),
    );
    page(form, "credit_note", items, "/v1/credit_notes")
}

pub(super) fn void_credit_note(
    a: &mut Account,
    id: &str,
    form: &Form<'_>,
) -> Result<Value, ApiError> {
    form.allow(&["expand"])?;
    let cn = credit_note(a, id)?.clone();
    if cn.status == "void" {
        return Err(ApiError::bad_request(format!(
            "The credit note {id} has already been voided."
        ))
        .executed());
    }
    let now = a.now_for(&cn.customer);
    if cn.credit_amount > 0 {
        a.add_balance_txn(
            &cn.customer,
            cn.credit_amount,
            &cn.currency,
            "credit_note",
            now,
            Some(cn.invoice.clone()),
            Some(id.to_string()),
            None,
            Metadata::new(),
        );
    }
    if let Some(i) = a.invoices.get_mut(&cn.invoice) {
        i.pre_payment_credit_notes_amount -= cn.pre_payment_amount;
        i.post_payment_credit_notes_amount -= cn.post_payment_amount;
        if cn.pre_payment_amount > 0 {
            i.amount_due += cn.pre_payment_amount;
            i.amount_remaining += cn.pre_payment_amount;
            if i.status == "paid" && i.amount_remaining > 0 {
                i.status = "open";
                i.paid_at = None;
            }
        }
    }
    let c = a
        .credit_notes
        .get_mut(id)
        .ok_or_else(|| ApiError::no_such("credit_note", id, "id"))?;
    c.status = "void";
    c.voided_at = Some(now);
    Ok(render::credit_note(c))
}
