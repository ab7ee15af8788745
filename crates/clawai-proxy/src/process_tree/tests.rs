use std::collections::BTreeSet;

use super::procfs::{Family, Process, adopted, environ_has, members, parse_stat};
use super::*;

fn living(pid: i32, ppid: i32) -> Process {
    Process { pid, ppid, dead: false }
}

fn zombie(pid: i32, ppid: i32) -> Process {
    Process { pid, ppid, dead: true }
}

fn set(pids: &[i32]) -> BTreeSet<i32> {
    pids.iter().copied().collect()
}

#[test]
fn stat_lines_are_read_past_a_command_name_with_spaces_and_parentheses() {
    let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 131 0 0 0 0 0 0 0 20 0 1 0 123 0 0";
    assert_eq!(parse_stat(line), Some(living(4242, 17)));
    assert_eq!(parse_stat("77 (sleep) Z 1 77 77 0"), Some(zombie(77, 1)));
    assert_eq!(parse_stat("78 (x) X 1 78"), Some(zombie(78, 1)));
    assert_eq!(parse_stat("garbage"), None);
    assert_eq!(parse_stat("12 (x) S"), None, "no parent field");
}

#[test]
fn a_tag_matches_only_a_whole_entry_of_the_environment() {
    let environ = b"PATH=/bin\0CLAWAI_SERVER_TAG=abc\0HOME=/root\0";
    assert!(environ_has(environ, b"CLAWAI_SERVER_TAG=abc"));
    assert!(!environ_has(environ, b"CLAWAI_SERVER_TAG=ab"), "a prefix of the value is another tag");
    assert!(!environ_has(b"X=CLAWAI_SERVER_TAG=abc\0", b"CLAWAI_SERVER_TAG=abc"), "inside another value");
    assert!(environ_has(b"CLAWAI_SERVER_TAG=abc", b"CLAWAI_SERVER_TAG=abc"), "last entry without a NUL");
}

/// clawai (100) runs servers 200 (tag A) and 300 (tag B). 200 has a child 201 and a
/// grandchild 202; 210 left with `setsid` and 220 from a double fork were reparented to
/// clawai and carry A; 221 is 220's child; 230 (adopted, tag A) is a zombie. 300's child
/// 301 carries B. 500 is another process of the machine that happens to carry A.
fn machine() -> Vec<Process> {
    vec![
        living(1, 0),
        living(100, 1),
        living(200, 100),
        living(201, 200),
        living(202, 201),
        living(210, 100),
        living(220, 100),
        living(221, 220),
        zombie(230, 100),
        living(300, 100),
        living(301, 300),
        living(500, 1),
    ]
}

fn tag_a(pid: i32) -> bool {
    matches!(pid, 200 | 201 | 202 | 210 | 220 | 221 | 230 | 500)
}

#[test]
fn a_servers_tree_is_its_descendants_and_the_processes_that_carry_its_tag() {
    let family = Family::of(&machine());
    assert_eq!(members(&family, 100, Some(200), tag_a), set(&[200, 201, 202, 210, 220, 221]));
}

#[test]
fn once_the_server_is_reaped_its_pid_is_not_followed_and_the_tag_still_finds_the_rest() {
    let family = Family::of(&machine());
    // 200 is now someone else's pid: what it has is not looked at through it.
    let without_tags = |_| false;
    assert_eq!(members(&family, 100, None, without_tags), set(&[]));
    assert_eq!(members(&family, 100, None, tag_a), set(&[200, 201, 202, 210, 220, 221]));
}

#[test]
fn a_descendant_that_emptied_its_environment_is_found_through_its_parent() {
    let family = Family::of(&machine());
    let only_the_adopted = |pid| pid == 220;
    assert_eq!(members(&family, 100, None, only_the_adopted), set(&[220, 221]));
}

#[test]
fn clawai_itself_other_servers_zombies_and_processes_beyond_clawai_are_never_members() {
    let family = Family::of(&machine());
    let everyone = |_| true;
    let found = members(&family, 100, Some(300), |pid| pid == 301 || pid == 100 || pid == 500);
    assert_eq!(found, set(&[300, 301]));
    assert!(!members(&family, 100, Some(200), everyone).contains(&100));
    assert!(!members(&family, 100, Some(200), everyone).contains(&230), "a zombie is signalled no more");
    assert!(!members(&family, 100, Some(200), everyone).contains(&1));
}

#[test]
fn the_adopted_are_the_children_clawai_did_not_start_and_their_descendants() {
    let family = Family::of(&machine());
    let own = set(&[200, 300]);
    assert_eq!(adopted(&family, 100, &own), set(&[210, 220, 221]));
    assert_eq!(adopted(&family, 100, &set(&[200, 300, 210, 220])), set(&[]));
}

#[test]
fn a_child_started_through_spawn_own_is_registered_until_dropped() {
    let (child, own) = spawn_own(|| std::process::Command::new("true").spawn(), |c| Some(c.id())).unwrap();
    let pid = child.id() as i32;
    assert!(own_children().contains(&pid));
    let mut child = child;
    child.wait().unwrap();
    drop(own);
    assert!(!own_children().contains(&pid));
}

#[test]
fn a_failed_start_registers_nothing() {
    let mut asked = false;
    let started = spawn_own(
        || std::process::Command::new("/no/such/program").spawn(),
        |c| {
            asked = true;
            Some(c.id())
        },
    );
    assert!(started.is_err());
    assert!(!asked, "no pid to register");
}

#[test]
fn tags_differ() {
    assert_ne!(ServerTag::new(), ServerTag::new());
    assert_eq!(ServerTag::new().entry().split(|&b| b == b'=').next(), Some(TAG_VARIABLE.as_bytes()));
}
