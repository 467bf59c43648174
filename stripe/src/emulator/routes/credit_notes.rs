//! Credit notes: create (by amount or lines), retrieve, list, void.

use super::{created_filter, newest_first, page, with_list};
use crate::emulator::errors::ApiError;
use crate::emulator::form::Form;
use crate::emulator::render;
use crate::emulator::state::{
    apply_metadata, Account, CreditNote, CreditNoteLine, Invoice, Metadata,
};
use serde_json::Value;

pub(super) fn credit_note<'a>(a: &'a Account, id: &str) -> Result<&'a CreditNote, ApiError> {
    a.credit_notes
        .get(id)
        .ok_or_else(|| ApiError::no_such("credit_note", id, "id"))
}

/// One line of a credit note request: its amount, description and the
/// invoice line item it credits (custom lines credit none).
struct LineRequest {
    amount: i64,
    description: Option<String>,
    item: Option<String>,
}

/// A checked credit note request against one invoice.
struct NoteRequest {
    invoice: Invoice,
    lines: Vec<LineRequest>,
    amount: i64,
    credit_amount: i64,
    out_of_band_amount: i64,
    /// The part that lowers what is still due on the invoice.
    pre: i64,
    /// The part credited after payment.
    post: i64,
    memo: Option<String>,
    reason: Option<String>,
    metadata: Metadata,
    effective_at: Option<i64>,
}

const CREATE_PARAMS: [&str; 12] = [
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
];

pub(super) fn create_credit_note(a: &mut Account, form: &Form<'_>) -> Result<Value, ApiError> {
    let request = parse_note(a, form)?;
    Ok(issue(a, request))
}

/// Reads and checks a credit note request, in Stripe's order of errors;
/// nothing is changed.
fn parse_note(a: &Account, form: &Form<'_>) -> Result<NoteRequest, ApiError> {
    form.allow(&CREATE_PARAMS)?;
    let inv_id = form.req_str("invoice")?;
    let invoice = a.invoice(inv_id, "invoice")?.clone();
    let lines = form
        .list("lines")?
        .iter()
        .map(|line| parse_line(line, &invoice))
        .collect::<Result<Vec<_>, _>>()?;
    let amount = note_amount(form, &lines)?;
    check_creditable(&invoice, amount)?;
    let (credit_amount, out_of_band_amount) = parse_split(form)?;
    let pre = if invoice.status == "open" {
        amount.min(invoice.amount_remaining)
    } else {
        0
    };
    let post = amount - pre;
    check_split(form, credit_amount + out_of_band_amount, post)?;
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
    let mut metadata = Metadata::new();
    apply_metadata(&mut metadata, form.metadata()?);
    let effective_at = form.int("effective_at")?;
    Ok(NoteRequest {
        invoice,
        lines,
        amount,
        credit_amount,
        out_of_band_amount,
        pre,
        post,
        memo,
        reason,
        metadata,
        effective_at,
    })
}

/// One `lines[N]` entry: an invoice line item (its amount by default) or a
/// custom line (with an amount).
fn parse_line(line: &Form<'_>, inv: &Invoice) -> Result<LineRequest, ApiError> {
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
    let no_such_item =
        |item: &str| ApiError::no_such("invoice line item", item, &line.name("invoice_line_item"));
    let amount = match (kind, line.int("amount")?) {
        (_, Some(x)) => x,
        ("invoice_line_item", None) => {
            let item = line.req_str("invoice_line_item")?;
            inv.lines
                .iter()
                .find(|l| l.id == item)
                .map(|l| l.amount)
                .ok_or_else(|| no_such_item(item))?
        }
        _ => return Err(ApiError::missing(&line.name("amount"))),
    };
    let item = if kind == "invoice_line_item" {
        let item = line.req_str("invoice_line_item")?;
        if !inv.lines.iter().any(|l| l.id == item) {
            return Err(no_such_item(item));
        }
        Some(item.to_string())
    } else {
        None
    };
    Ok(LineRequest {
        amount,
        description: line.text("description", 5000)?,
        item,
    })
}

/// The note's amount: `amount`, the sum of its lines, or both when they agree.
fn note_amount(form: &Form<'_>, lines: &[LineRequest]) -> Result<i64, ApiError> {
    let sum = || lines.iter().map(|l| l.amount).sum::<i64>();
    let amount = match (form.int("amount")?, lines.is_empty()) {
        (Some(x), true) => x,
        (None, false) => sum(),
        (Some(x), false) => {
            let sum = sum();
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
    Ok(amount)
}

/// An open or paid invoice with at least `amount` still creditable.
fn check_creditable(inv: &Invoice, amount: i64) -> Result<(), ApiError> {
    let inv_id = &inv.id;
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
    Ok(())
}

/// `credit_amount` and `out_of_band_amount` (each at least 0); a refund is
/// refused, as the emulator holds no card payment to refund.
fn parse_split(form: &Form<'_>) -> Result<(i64, i64), ApiError> {
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
    Ok((credit_amount, oob_amount))
}

/// The post-payment part is split exactly into credit, refund and out of
/// band amounts (`split`, the refund being 0).
fn check_split(form: &Form<'_>, split: i64, post: i64) -> Result<(), ApiError> {
    if split == post {
        return Ok(());
    }
    Err(ApiError::invalid(
        if form.has("credit_amount") {
            "credit_amount"
        } else {
            "amount"
        },
        format!(
            "The sum of credit amount, refund amount and out of band amount ({split}) must equal \
             the credit note's post-payment amount ({post})."
        ),
    ))
}

/// Issues a checked credit note: the customer's credit balance transaction,
/// the note's lines, the invoice's credited amounts (an open invoice credited
/// in full becomes paid), and the note itself.
fn issue(a: &mut Account, r: NoteRequest) -> Value {
    let inv = &r.invoice;
    let inv_id = inv.id.as_str();
    let now = a.now_for(&inv.customer);
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
    let cbtxn = (r.credit_amount > 0).then(|| {
        a.add_balance_txn(
            &inv.customer,
            -r.credit_amount,
            &inv.currency,
            "credit_note",
            now,
            Some(inv_id.to_string()),
            Some(id.clone()),
            None,
            Metadata::new(),
        )
    });
    let lines = note_lines(a, r.lines, r.amount, r.memo.as_deref());
    credit_invoice(a, inv_id, r.pre, r.post, now);
    let cn = CreditNote {
        id: id.clone(),
        seq,
        created: now,
        customer: inv.customer.clone(),
        invoice: inv_id.to_string(),
        currency: inv.currency.clone(),
        amount: r.amount,
        credit_amount: r.credit_amount,
        out_of_band_amount: r.out_of_band_amount,
        pre_payment_amount: r.pre,
        post_payment_amount: r.post,
        status: "issued",
        kind: match (r.pre > 0, r.post > 0) {
            (true, true) => "mixed",
            (true, false) => "pre_payment",
            _ => "post_payment",
        },
        memo: r.memo,
        reason: r.reason,
        metadata: r.metadata,
        number,
        customer_balance_transaction: cbtxn,
        voided_at: None,
        effective_at: r.effective_at.unwrap_or(now),
        lines,
    };
    let out = render::credit_note(&cn);
    a.credit_notes.insert(id, cn);
    out
}

/// The note's lines with their ids; a note by amount alone gets one line
/// described by its memo (or "Credit").
fn note_lines(
    a: &mut Account,
    mut requested: Vec<LineRequest>,
    amount: i64,
    memo: Option<&str>,
) -> Vec<CreditNoteLine> {
    if requested.is_empty() {
        requested.push(LineRequest {
            amount,
            description: Some(memo.unwrap_or("Credit").to_string()),
            item: None,
        });
    }
    requested
        .into_iter()
        .map(|l| CreditNoteLine {
            id: a.new_id("cnli"),
            amount: l.amount,
            description: l.description,
            invoice_line_item: l.item,
        })
        .collect()
}

/// Adds a note's parts to its invoice; the pre-payment part lowers what is
/// due, and an open invoice with nothing left to pay is paid.
fn credit_invoice(a: &mut Account, inv_id: &str, pre: i64, post: i64, now: i64) {
    let Some(i) = a.invoices.get_mut(inv_id) else {
        return;
    };
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
