//! `magrathea resume` while another `magrathea` process owns the store: that process drives
//! the runs (it recovered them when it opened the store), and `resume` is its client, printing
//! the project's unfinished runs instead of failing on the store's lock.

use crate::cli_common::{code, stderr, stdout};
use crate::cli_owner::{cli, project, run_owner, two_runs};

#[test]
fn resume_is_a_client_of_the_store_owner() {
    let p = project();
    let (done, waiting) = two_runs(&p);
    let owner = run_owner(&p);
    let out = cli(&p, &["resume", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("the store is open in another magrathea process, which drives its runs"),
        "{}",
        stderr(&out)
    );
    let listed = stdout(&out);
    // The run the owner holds and the one waiting at its gate; not the finished one.
    assert!(listed.contains(&waiting), "{listed}");
    assert!(listed.contains("\"hold\""), "{listed}");
    assert!(!listed.contains(&done), "{listed}");
    drop(owner);
}
