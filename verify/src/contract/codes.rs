//! The finding codes of the contract's stages, one enum per stage; a [`crate::finding::Finding`]
//! carries the code's [`as_str`](Signature::as_str) form, so tests and tools match on it.

macro_rules! stage_codes {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// The code as findings carry it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }
    };
}

stage_codes! {
    /// Stage 1: the file's signature.
    Signature {
        /// No signature, or not lowercase hex of the right length.
        Malformed => "signature_malformed",
        /// The signer is not a key the rule accepts (weak, torsion, not on the curve).
        KeyRefused => "signature_key_refused",
        /// The file names another signer than the pinned key.
        NotPinnedKey => "signature_not_pinned_key",
        /// The stated hash is not the hash of the file as it stands.
        HashMismatch => "signature_hash_mismatch",
        /// The signature does not verify (strictly) under the key.
        BadSignature => "signature_invalid",
    }
}

stage_codes! {
    /// Stage 2: the plan.
    Plan {
        /// The parameters do not give a plan.
        BadParams => "plan_bad_params",
        /// The file holds other cells than the plan, or in another order.
        CellSetMismatch => "plan_cell_set_mismatch",
    }
}

stage_codes! {
    /// Stage 3: the cells.
    Cells {
        /// A ticket of a gated column carries no receipt.
        ReceiptMissing => "cells_receipt_missing",
        /// A receipt does not verify (its problems follow, by their own codes).
        ReceiptInvalid => "cells_receipt_invalid",
        /// A receipt is not the ticket's: another effect id, other journal kinds, a status it
        /// does not allow.
        ReceiptNotBound => "cells_receipt_not_bound",
        /// A recorded kill is not the worker's first exit by SIGKILL at that point (or a
        /// SIGKILL exit is not recorded as a kill).
        KillNotBound => "cells_kill_not_bound",
        /// A harness error without its reason and the worker's output.
        HarnessErrorWithoutEvidence => "cells_harness_error_without_evidence",
        /// The ground truth does not add up (the scenario's rules say why).
        GroundTruth => "cells_ground_truth",
        /// The stated judgement is not the derived one, or a judged cell states none.
        JudgementMismatch => "cells_judgement_mismatch",
    }
}

stage_codes! {
    /// Stage 4: the summary.
    Summary {
        /// The stated summary is not the one derived from the verifier's judgements.
        Mismatch => "summary_mismatch",
    }
}
