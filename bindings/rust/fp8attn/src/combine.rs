//! attention_combine: merging partial attention results over disjoint key sets.
use crate::context::Context;
use crate::error::{check, Result};
use crate::tensor::{HostBuffer, TensorMut, TensorRef};
use fp8attn_sys as sys;

/// Merges `num_parts` partial results (fp8attn_attention_combine): `partial_out` [num_parts,
/// tokens, heads, head_dim] F32 or BF16, `partial_lse` F32 [num_parts, tokens, heads] (natural
/// log; −inf marks a part with no visible key, whose O is not read), 1 to 256 parts, any strides.
/// Writes `out` [tokens, heads, head_dim] (F32 or BF16) = Σ_p exp(lse_p − lse)·O_p and, when
/// given, `lse` F32 [tokens, heads] = log Σ_p exp(lse_p); a row whose parts are all empty gets 0
/// and −inf. A forward's LSE is [heads, tokens]: describe the stacked LSEs with
/// `TensorRef::strided` (strides [heads·tokens, 1, tokens]) rather than copying them.
pub fn attention_combine(context: &Context, partial_out: &TensorRef<'_>, partial_lse: &TensorRef<'_>,
                         out: &mut TensorMut<'_>, lse: Option<&mut TensorMut<'_>>) -> Result<()> {
    let args = sys::fp8attn_combine_args {
        struct_size: core::mem::size_of::<sys::fp8attn_combine_args>(),
        next: core::ptr::null(),
        partial_out: partial_out.raw,
        partial_lse: partial_lse.raw,
        out: out.raw,
        // NOTE: a zeroed tensor (NULL data) is the header's "absent".
        lse: lse.map_or_else(|| unsafe { core::mem::zeroed() }, |l| l.raw),
    };
    let mut bytes = 0usize;
    check(|e| unsafe { sys::fp8attn_attention_combine_workspace_size(context.as_raw(), &args, &mut bytes, e) })?;
    let mut workspace = HostBuffer::new(bytes)?;
    check(|e| unsafe {
        sys::fp8attn_attention_combine(context.as_raw(), &args, workspace.as_mut_ptr(), bytes, core::ptr::null_mut(), e)
    })
}
