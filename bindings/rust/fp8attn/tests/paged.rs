//! The forward over a paged KV cache (ForwardArgs::paged): bit-equal to the padded contiguous
//! call on the same K and V (pages in a shuffled order, a block-table row stride larger than its
//! row, unused slots holding NaN codes), and a block-table entry past the pool refused with its
//! status and message, the output left at its poison.
mod common;
use common::{seed, Rng};
use fp8attn::*;

const B: usize = 2;
const SK: usize = 45; // 3 pages of 16, the last one partly used
const PAGE: usize = 16;
const PAGES: usize = 3;
const HKV: usize = 2;
const HQ: usize = 4;
const D: usize = 64;
const SQ: usize = 7;

struct Cache {
    k_cache: Vec<E4m3>,
    v_cache: Vec<E4m3>,
    table: Vec<i32>, // [B, PAGES + 2]: a row stride of PAGES + 2
    num_pages: usize,
}

/// Scatters padded K and V [B, SK, HKV, D] into shuffled pages.
fn scatter(k: &[E4m3], v: &[E4m3], rng: &mut Rng) -> Cache {
    let num_pages = B * PAGES + 1;
    let mut perm: Vec<i32> = (0..num_pages as i32).collect();
    for i in (1..num_pages).rev() {
        perm.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let row = HKV * D;
    let mut cache = Cache { k_cache: vec![E4m3(0x7F); num_pages * PAGE * row], v_cache: vec![E4m3(0x7F); num_pages * PAGE * row],
                            table: vec![-1; B * (PAGES + 2)], num_pages };
    for b in 0..B {
        for p in 0..PAGES {
            cache.table[b * (PAGES + 2) + p] = perm[b * PAGES + p];
        }
        for j in 0..SK {
            let slot = cache.table[b * (PAGES + 2) + j / PAGE] as usize * PAGE + j % PAGE;
            cache.k_cache[slot * row..(slot + 1) * row].copy_from_slice(&k[(b * SK + j) * row..(b * SK + j + 1) * row]);
            cache.v_cache[slot * row..(slot + 1) * row].copy_from_slice(&v[(b * SK + j) * row..(b * SK + j + 1) * row]);
        }
    }
    cache
}

fn paged_forward(plan: &Plan, q: &[E4m3], c: &Cache, seqused: &[i32], out: &mut [f32]) -> Result<()> {
    let (qs, cs) = ([B as i64, SQ as i64, HQ as i64, D as i64], [c.num_pages as i64, PAGE as i64, HKV as i64, D as i64]);
    let table = TensorRef::strided(&c.table, &[B as i64, PAGES as i64], &[(PAGES + 2) as i64, 1])?;
    let mut args = ForwardArgs::new(TensorRef::new(q, &qs)?, TensorRef::new(&c.k_cache, &cs)?,
                                    TensorRef::new(&c.v_cache, &cs)?, TensorMut::new(out, &qs)?)
        .paged(PagedKv { block_table: table, seqused_k: TensorRef::new(seqused, &[B as i64])?, max_seqlen_k: SK as i64,
                         scales: None });
    plan.forward(&mut args).map(|_| ())
}

#[test]
fn paged_forward_equals_contiguous() {
    let mut rng = Rng(seed("paged forward"));
    let (q, k, v) = (rng.e4m3_vec(B * SQ * HQ * D), rng.e4m3_vec(B * SK * HKV * D), rng.e4m3_vec(B * SK * HKV * D));
    let cache = scatter(&k, &v, &mut rng);
    let ctx = Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, ..Default::default() })
        .unwrap();
    let desc = AttentionDesc::new(D as i32, HQ as i32, HKV as i32).causal(true).output_dtype(DType::F32);
    let mut out = vec![f32::NAN; B * SQ * HQ * D];
    let plan = Plan::new(&ctx, &desc.page_size(PAGE as i32)).unwrap();
    paged_forward(&plan, &q, &cache, &[SK as i32, SK as i32], &mut out).unwrap();

    let contiguous = Plan::new(&ctx, &desc).unwrap();
    let mut want = vec![f32::NAN; B * SQ * HQ * D];
    let (qs, ks) = ([B as i64, SQ as i64, HQ as i64, D as i64], [B as i64, SK as i64, HKV as i64, D as i64]);
    let mut args = ForwardArgs::new(TensorRef::new(&q, &qs).unwrap(), TensorRef::new(&k, &ks).unwrap(),
                                    TensorRef::new(&v, &ks).unwrap(), TensorMut::new(&mut want, &qs).unwrap());
    contiguous.forward(&mut args).unwrap();
    assert!(out.iter().all(|x| x.is_finite()), "unwritten or NaN outputs");
    let same = out.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same, "paged and contiguous outputs differ");
    println!("{} outputs bit-equal", out.len());
}

#[test]
fn block_table_entry_past_the_pool_is_refused() {
    let mut rng = Rng(seed("paged refusal"));
    let (q, k, v) = (rng.e4m3_vec(B * SQ * HQ * D), rng.e4m3_vec(B * SK * HKV * D), rng.e4m3_vec(B * SK * HKV * D));
    let mut cache = scatter(&k, &v, &mut rng);
    cache.table[PAGES + 2 + 1] = cache.num_pages as i32; // sequence 1's second page
    let ctx = Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, ..Default::default() })
        .unwrap();
    let plan = Plan::new(&ctx, &AttentionDesc::new(D as i32, HQ as i32, HKV as i32).output_dtype(DType::F32)
        .page_size(PAGE as i32)).unwrap();
    let mut out = vec![f32::NAN; B * SQ * HQ * D];
    let err = paged_forward(&plan, &q, &cache, &[SK as i32, SK as i32], &mut out).unwrap_err();
    assert_eq!(err.status(), sys::FP8ATTN_STATUS_INVALID_ARGUMENT, "{}", err.message());
    assert!(err.message().contains("block_table[1, 1]"), "{}", err.message());
    assert!(out.iter().all(|x| x.is_nan()), "a refused call wrote its output");
    let err = paged_forward(&plan, &q, &cache, &[SK as i32 + 10, 0], &mut out).unwrap_err();
    assert_eq!(err.status(), sys::FP8ATTN_STATUS_BAD_SEQLENS, "{}", err.message());
}
