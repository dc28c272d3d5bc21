//! kv_append: F32 rows into an E4M3 paged cache with per-(token, head) descales (each row's
//! largest element at ±448, every element within half an E4M3 step, untouched slots keeping their
//! poison), and a slot past the cache refused with the caches left alone.
mod common;
use common::{seed, Rng};
use fp8attn::*;

const TOKENS: usize = 7;
const HEADS: usize = 2;
const DIM: usize = 32;
const PAGES: usize = 3;
const PAGE: usize = 4;

fn cpu() -> Context {
    Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, log_level: LogLevel::Off,
                                           ..Default::default() }).unwrap()
}

fn inputs(rng: &mut Rng) -> (Vec<f32>, Vec<f32>, Vec<i64>) {
    let k: Vec<f32> = (0..TOKENS * HEADS * DIM).map(|_| (rng.normal() * 3.0) as f32).collect();
    let v: Vec<f32> = (0..TOKENS * HEADS * DIM).map(|_| (rng.normal() * 0.1) as f32).collect();
    // A shuffled set of slots; token 2 is padding.
    let mut all: Vec<i64> = (0..(PAGES * PAGE) as i64).collect();
    for i in (1..all.len()).rev() {
        all.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut slots = all[..TOKENS].to_vec();
    slots[2] = -1;
    (k, v, slots)
}

#[test]
fn token_head_descales_and_poison() {
    let ctx = cpu();
    let (k, v, slots) = inputs(&mut Rng(seed("kv_append_token_head")));
    let (mut kc, mut vc) = (vec![E4m3(0x7F); PAGES * PAGE * HEADS * DIM], vec![E4m3(0x7F); PAGES * PAGE * HEADS * DIM]);
    let (mut kd, mut vd) = (vec![f32::NAN; PAGES * PAGE * HEADS], vec![f32::NAN; PAGES * PAGE * HEADS]);
    let (in_shape, cache_shape, d_shape) = ([TOKENS as i64, HEADS as i64, DIM as i64],
                                            [PAGES as i64, PAGE as i64, HEADS as i64, DIM as i64],
                                            [PAGES as i64, PAGE as i64, HEADS as i64]);
    kv_append(&ctx, &mut KvAppendArgs {
        k: TensorRef::new(&k, &in_shape).unwrap(),
        v: TensorRef::new(&v, &in_shape).unwrap(),
        k_cache: TensorMut::new(&mut kc, &cache_shape).unwrap(),
        v_cache: TensorMut::new(&mut vc, &cache_shape).unwrap(),
        slot_mapping: TensorRef::new(&slots, &[TOKENS as i64]).unwrap(),
        descales: KvDescales::PerTokenHead { k: TensorMut::new(&mut kd, &d_shape).unwrap(),
                                             v: TensorMut::new(&mut vd, &d_shape).unwrap() },
        rotate: false,
        seed: 0,
    }).unwrap();
    for (x, cache, descale) in [(&k, &kc, &kd), (&v, &vc, &vd)] {
        for (t, &slot) in slots.iter().enumerate() {
            if slot < 0 {
                continue;
            }
            for h in 0..HEADS {
                let row = &x[(t * HEADS + h) * DIM..(t * HEADS + h + 1) * DIM];
                let amax = row.iter().fold(0f32, |m, &e| m.max(e.abs()));
                let d = descale[slot as usize * HEADS + h];
                assert_eq!(d, 1.0 / (448.0 / amax), "token {t} head {h}");
                let codes = &cache[(slot as usize * HEADS + h) * DIM..(slot as usize * HEADS + h + 1) * DIM];
                assert_eq!(codes.iter().fold(0f32, |m, c| m.max(c.to_f32().abs())), 448.0);
                for (c, &e) in codes.iter().zip(row) {
                    let half_step = (c.to_f32().abs() / 16.0).max(1.0 / 1024.0) * d;
                    assert!((c.to_f32() * d - e).abs() <= half_step * 1.0001, "token {t} head {h}: {e} vs {c:?}");
                }
            }
        }
        for slot in 0..(PAGES * PAGE) as i64 {
            if slots.contains(&slot) {
                continue;
            }
            let s = slot as usize;
            assert!(cache[s * HEADS * DIM..(s + 1) * HEADS * DIM].iter().all(|c| c.0 == 0x7F), "slot {slot} written");
            assert!(descale[s * HEADS..(s + 1) * HEADS].iter().all(|d| d.is_nan()), "slot {slot} descale written");
        }
    }
}

#[test]
fn slot_past_the_cache_is_refused() {
    let ctx = cpu();
    let (k, v, mut slots) = inputs(&mut Rng(seed("kv_append_refused")));
    slots[0] = (PAGES * PAGE) as i64;
    let (mut kc, mut vc) = (vec![Bf16(0x7FC1); PAGES * PAGE * HEADS * DIM], vec![Bf16(0x7FC1); PAGES * PAGE * HEADS * DIM]);
    let (in_shape, cache_shape) = ([TOKENS as i64, HEADS as i64, DIM as i64], [PAGES as i64, PAGE as i64, HEADS as i64, DIM as i64]);
    let e = kv_append(&ctx, &mut KvAppendArgs {
        k: TensorRef::new(&k, &in_shape).unwrap(),
        v: TensorRef::new(&v, &in_shape).unwrap(),
        k_cache: TensorMut::new(&mut kc, &cache_shape).unwrap(),
        v_cache: TensorMut::new(&mut vc, &cache_shape).unwrap(),
        slot_mapping: TensorRef::new(&slots, &[TOKENS as i64]).unwrap(),
        descales: KvDescales::None,
        rotate: true,
        seed: 5,
    }).err().expect("a slot past the cache must fail");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_INVALID_ARGUMENT);
    assert!(e.message().contains("slot_mapping[0]"), "{}", e.message());
    assert!(kc.iter().chain(vc.iter()).all(|b| b.0 == 0x7FC1));
}
