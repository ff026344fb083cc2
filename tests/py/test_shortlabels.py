"""hmtune.analyze.shortlabels: one label per site that tells it apart from the others, on
chains that share their inner frames (an allocation template and its wrapper, like
LAMMPS's Memory::create<T> / Memory::smalloc), stripped chains, runtime frames."""

from __future__ import annotations

import random

from hmtune.analyze.shortlabels import (
    GAP,
    NO_STACK,
    Frame,
    SiteChain,
    chain_of,
    frame_text,
    is_runtime,
    labels_for_rows,
    short_function,
    short_labels,
)

LIB = "/usr/lib/x86_64-linux-gnu/liblammps.so.0"
SMALLOC = ("/build/lammps/src/memory.cpp:59",
           "LAMMPS_NS::Memory::smalloc(long, char const*)")
CREATE = ("/build/lammps/src/memory.h:66",
          "double* LAMMPS_NS::Memory::create<double>(double*&, int, char const*)")
MAIN = ("/build/lammps/src/main.cpp:77", "main")
START = ("./csu/../sysdeps/x86/libc-start.c:58", "__libc_start_call_main")


def debug_chain(*callers: tuple[str, str]) -> SiteChain:
    """smalloc > create<double> > callers... > main > libc start, with functions and
    the module of every frame (the 41000012 levels: one frame each)."""
    frames = [SMALLOC, CREATE, *callers, MAIN, START]
    mods = [LIB] * (len(frames) - 2) + ["/usr/bin/lmp", "/lib/x86_64-linux-gnu/libc.so.6"]
    raw = " > ".join(f"{m}+0x{0x1000 + 16 * i + len(callers[0][0]):x}"
                     for i, m in enumerate(mods))
    return chain_of(" > ".join(loc for loc, _ in frames), raw,
                    " > ".join(fn for _, fn in frames), " > ".join("1" for _ in frames))


def test_short_function() -> None:
    cases = {
        "double* LAMMPS_NS::Memory::create<double>(double*&, int, char const*)":
            "Memory::create<double>",
        "std::vector<double, std::allocator<double>>::_M_realloc_insert<double const&>"
        "(__gnu_cxx::__normal_iterator<double*, std::vector<double, std::allocator<double>>>,"
        " double const&)": "vector<…>::_M_realloc_insert<double const&>",
        "operator new(unsigned long)": "operator new",
        "operator new[](unsigned long)": "operator new[]",
        "(anonymous namespace)::helper(int)": "(anonymous namespace)::helper",
        "foo()::{lambda(int)#1}::operator()(int) const": "{lambda(int)#1}::operator()",
        "std::ostream& operator<<(std::ostream&, Foo const&)": "operator<<",
        "LAMMPS_NS::PairLJCut::compute(int, int) [clone .cold]": "PairLJCut::compute",
        "MAIN__": "MAIN__",
    }
    for name, short in cases.items():
        assert short_function(name) == short, name
    assert len(short_function("a::" + "x" * 200 + "()", 30)) == 30


def test_sites_sharing_inner_frames_read_apart() -> None:
    """Five arrays through one template line: each label starts at the wrapper and
    shows the caller that differs, with its function."""
    callers = {
        3: ("/build/lammps/src/atom_vec.cpp:120", "LAMMPS_NS::AtomVec::grow(int)"),
        4: ("/build/lammps/src/atom_vec.cpp:121", "LAMMPS_NS::AtomVec::grow(int)"),
        5: ("/build/lammps/src/neigh_list.cpp:88", "LAMMPS_NS::NeighList::grow(int, int)"),
        6: ("/build/lammps/src/comm_brick.cpp:940", "LAMMPS_NS::CommBrick::grow_send(int, int)"),
        7: ("/build/lammps/src/fix_nve.cpp:55", "LAMMPS_NS::FixNVE::init()"),
    }
    labels = short_labels({k: debug_chain(c) for k, c in callers.items()})
    assert len(set(labels.values())) == 5
    for k, (loc, _) in callers.items():
        assert labels[k].startswith("memory.cpp:59 Memory::smalloc"), labels[k]
        assert loc.rsplit("/", 1)[1] in labels[k]
        assert GAP in labels[k]                       # create<double> is skipped
        assert "memory.h:66" not in labels[k]
    assert labels[5].endswith("neigh_list.cpp:88 NeighList::grow")
    assert all("main" not in v and "libc-start" not in v for v in labels.values())


def test_first_difference_further_out() -> None:
    """Two sites of one caller line, called from two places: the label shows the frame
    where they part (the shared caller line is no help); a third site of another caller
    line needs only that line."""
    grow = ("/build/lammps/src/atom_vec.cpp:120", "LAMMPS_NS::AtomVec::grow(int)")
    a = debug_chain(grow, ("/build/lammps/src/create_atoms.cpp:300", "CreateAtoms::add()"))
    b = debug_chain(grow, ("/build/lammps/src/read_data.cpp:700", "ReadData::atoms()"))
    c = debug_chain(("/build/lammps/src/atom_vec.cpp:125", "LAMMPS_NS::AtomVec::grow(int)"),
                    ("/build/lammps/src/read_data.cpp:700", "ReadData::atoms()"))
    labels = short_labels({1: a, 2: b, 3: c})
    assert labels[1] == ("memory.cpp:59 Memory::smalloc > … > atom_vec.cpp:120 AtomVec::grow"
                         " > create_atoms.cpp:300 CreateAtoms::add")
    assert labels[2] == ("memory.cpp:59 Memory::smalloc > … > atom_vec.cpp:120 AtomVec::grow"
                         " > read_data.cpp:700 ReadData::atoms")
    assert labels[3] == "memory.cpp:59 Memory::smalloc > … > atom_vec.cpp:125 AtomVec::grow"


def stripped(*frames: str) -> SiteChain:
    """A chain of a stripped library: symbol+0xOFF frames (.dynsym) in LIB."""
    raw = " > ".join(f"{LIB}+0x{1000 + i:x}" for i in range(len(frames)))
    funcs = " > ".join(f if f.startswith("lib") else f.rsplit("+0x", 1)[0] for f in frames)
    return chain_of(" > ".join(frames), raw, funcs, " > ".join("1" for _ in frames))


def test_stripped_offsets_only_where_needed() -> None:
    sm = "LAMMPS_NS::Memory::srealloc(void*, long, char const*)+0x39"
    chains = {
        1: stripped(sm, "LAMMPS_NS::AtomVec::grow(int)+0x79", "LAMMPS_NS::CreateAtoms::add()+0x4"),
        2: stripped(sm, "LAMMPS_NS::AtomVec::grow(int)+0xcc", "LAMMPS_NS::CreateAtoms::add()+0x4"),
        3: stripped(sm, "LAMMPS_NS::CommBrick::grow_list(int, int)+0x5b",
                    "LAMMPS_NS::CommBrick::borders()+0x806"),
    }
    labels = short_labels(chains)
    assert labels[1] == "Memory::srealloc > AtomVec::grow+0x79"
    assert labels[2] == "Memory::srealloc > AtomVec::grow+0xcc"
    assert labels[3] == "Memory::srealloc > CommBrick::grow_list"
    assert not any("??" in v for v in labels.values())


def test_module_offset_frames() -> None:
    chains = {1: stripped("liblammps.so.0+0x1234", "liblammps.so.0+0x99"),
              2: stripped("liblammps.so.0+0x1234", "liblammps.so.0+0x77")}
    assert short_labels(chains) == {1: "liblammps.so.0+0x1234 > liblammps.so.0+0x99",
                                    2: "liblammps.so.0+0x1234 > liblammps.so.0+0x77"}


def test_runtime_frames_are_skipped() -> None:
    """operator new in libstdc++ and inlined std::vector code from /usr/include come
    before the application's line; libc's startup after it."""
    frames = ("operator new(unsigned long)+0x1c > /usr/include/c++/12/bits/new_allocator.h:137"
              " > /usr/include/c++/12/bits/stl_vector.h:378 > /src/app.cpp:22 > "
              "./csu/../sysdeps/x86/libc-start.c:58")
    funcs = ("operator new(unsigned long) > std::__new_allocator<double>::allocate(unsigned "
             "long, void const*) > std::_Vector_base<double, std::allocator<double>>::"
             "_M_allocate(unsigned long) > main > __libc_start_call_main")
    raw = ("/lib/x86_64-linux-gnu/libstdc++.so.6+0xa9d6c > /src/app+0x1234 > "
           "/lib/x86_64-linux-gnu/libc.so.6+0x2724a")
    c = chain_of(frames, raw, funcs, "1 > 3 > 1")
    assert [is_runtime(f) for f in c.frames] == [True, True, True, False, True]
    other = chain_of("operator new(unsigned long)+0x1c > /src/app.cpp:30", "", "")
    labels = short_labels({1: c, 2: other})
    assert labels == {1: "app.cpp:22 main", 2: "app.cpp:30"}


def test_distinct_chains_always_get_distinct_labels() -> None:
    # equal readable frames, different raw chains (two calls on one line)
    same = "/src/a.c:10 > /src/main.c:5"
    chains = {1: chain_of(same, "/bin/a+0x10 > /bin/a+0x50"),
              2: chain_of(same, "/bin/a+0x18 > /bin/a+0x50"),
              3: chain_of(same, "/bin/a+0x18 > /bin/a+0x50")}      # same chain, 2 ids
    labels = short_labels(chains)
    assert labels[1] == "a.c:10 @ a+0x10" and labels[2].startswith("a.c:10 @ a+0x18")
    assert len(set(labels.values())) == 3 and labels[3].endswith("(site 3)")
    assert short_labels({9: chain_of("??", "")}) == {9: NO_STACK}


def test_gap_rendering_cannot_merge_two_chains() -> None:
    """{frame 0, frame 2} of one chain and {frame 0, frame 3} of another may read the
    same text: then every frame up to the last shown is written."""
    chains = {1: chain_of("/a.c:1 > /b.c:2 > /c.c:3"),
              2: chain_of("/a.c:1 > /b.c:9 > /x.c:3 > /c.c:3"),
              3: chain_of("/a.c:1 > /b.c:2 > /d.c:4"),
              4: chain_of("/a.c:1 > /b.c:9 > /x.c:3 > /e.c:5")}
    labels = short_labels(chains)
    assert len(set(labels.values())) == 4


def test_random_chains_are_told_apart() -> None:
    rng = random.Random(14)
    pool = [f"/src/f{i}.c:{10 * i}" for i in range(4)] + ["x+0x10", "y(int)+0x20"]
    chains: dict[int, SiteChain] = {}
    seen: set[tuple[str, ...]] = set()
    while len(chains) < 300:
        c = tuple(rng.choice(pool) for _ in range(rng.randint(1, 6)))
        if c not in seen:
            seen.add(c)
            chains[len(chains) + 3] = chain_of(" > ".join(c))
    labels = short_labels(chains)
    assert len(set(labels.values())) == len(chains)


def test_labels_for_rows_of_an_older_sites_csv() -> None:
    rows = [(3, "/src/m.h:66 > /src/a.c:10 > /src/main.c:5", "/x+0x1 > /x+0x2 > /x+0x3"),
            (4, "/src/m.h:66 > /src/b.c:20 > /src/main.c:5", "/x+0x1 > /x+0x4 > /x+0x3")]
    assert labels_for_rows(rows) == {3: "m.h:66 > a.c:10", 4: "m.h:66 > b.c:20"}


def test_frame_text_forms() -> None:
    assert frame_text(Frame("/a/b/app.c:12", "main")) == "app.c:12 main"
    assert frame_text(Frame("/a/b/app+0x1188")) == "app+0x1188"
    assert frame_text(Frame("liblammps.so.0+0x1234")) == "liblammps.so.0+0x1234"
    sym = "LAMMPS_NS::Neighbor::build(int)"
    assert frame_text(Frame(sym + "+0x2a7", sym)) == "Neighbor::build+0x2a7"
    assert frame_text(Frame(sym + "+0x2a7", sym), coarse=True) == "Neighbor::build"
    assert frame_text(Frame("??", "", "/lib/libfoo.so")) == "libfoo.so"
