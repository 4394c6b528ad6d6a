//! Layout tests on synthetic ELFs: page-table walks, tags, tables, bad input. With the unpacked
//! kernel source (build.rs), the tags are also read by the kernel's own `src/args.rs`.

use crate::elf::{self, testelf::elf, EM_RISCV, PF_W, PF_X};
use crate::layout::*;
use crate::tags::{self, Region};
use crate::{stub, Program};

fn params() -> Params {
    Params {
        ram_base: 0x4000_0000,
        ram_size: 0x100_0000,
        ram_name: tags::name_word(b"SrEx"),
        regions: vec![
            Region { start: 0xf000_0000, size: 0x2_6000, name: tags::name_word(b"CSRs") },
            Region { start: 0xe002_0000, size: 0x3_0000, name: tags::name_word(b"engi") },
        ],
    }
}

fn prog(name: &str, entry: u32, segs: &[(u32, u32, u32, u32)]) -> Program {
    Program { name: name.into(), elf: elf::parse(&elf(1, EM_RISCV, entry, segs)).unwrap() }
}

/// A kernel shaped like xous-kernel's: text, rodata sharing text's last page, data at
/// 0xffd8_0000 and bss sharing data's last page.
fn kernel() -> Program {
    prog(
        "kernel",
        0xffd0_0418,
        &[
            (0xffd0_0000, 0x1ae00, 0x1ae00, PF_X),
            (0xffd1_ae00, 0x56b4, 0x56b4, 0),
            (0xffd8_0000, 0x2358, 0x2358, PF_W),
            (0xffd8_2358, 0x1c4, 0, PF_W),
        ],
    )
}

fn programs() -> Vec<Program> {
    vec![
        prog(
            "xous-ticktimer",
            0x2_0100,
            &[(0x1_0118, 0x6f00, 0x6f00, 0), (0x1_7fe8, 0x281d0, 0x281d0, PF_X), (0x4_11b8, 0x314, 0x270, PF_W)],
        ),
        prog(
            "engine",
            0x1_1000,
            &[(0x1_0000, 0x800, 0x800, 0), (0x1_1000, 0x3000, 0x2f00, PF_X), (0x1_4000, 0x20000, 0x100, PF_W)],
        ),
    ]
}

#[test]
fn segments_resolve_through_the_page_tables() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    assert_eq!(l.processes.len(), 3);
    for (pr, info) in std::iter::once(&k).chain(ps.iter()).zip(&l.processes) {
        for s in &pr.elf.segments {
            // first and last byte of each segment, flags included
            for va in [s.vaddr, s.vaddr + s.memsz - 1] {
                let (pa, f) = walk(&l.ram, 0x4000_0000, info.satp, va).unwrap();
                assert!(pa >= 0x4000_0000 && pa < l.end_used);
                assert_eq!(f & FLG_U != 0, info.pid != 1, "{:#x}", va);
                if s.flags & PF_X != 0 {
                    assert!(f & FLG_X != 0, "{va:#x}");
                }
            }
        }
    }
    // the kernel's rodata page shared with text is executable and readable; data/bss page writable
    let ks = l.kernel().satp;
    let (_, f) = walk(&l.ram, 0x4000_0000, ks, 0xffd1_a000).unwrap();
    assert_eq!(f & (FLG_R | FLG_W | FLG_X), FLG_R | FLG_X);
    let (pa_data, _) = walk(&l.ram, 0x4000_0000, ks, 0xffd8_2000).unwrap();
    let (pa_bss, f) = walk(&l.ram, 0x4000_0000, ks, 0xffd8_2358).unwrap();
    assert_eq!(pa_bss, pa_data + 0x358);
    assert!(f & FLG_W != 0);
    // bss reads as zero, data as the file bytes
    assert_eq!(l.read_virt(ks, 0xffd8_2350, 16).unwrap(), [[0x42u8; 8], [0u8; 8]].concat());
    // user memory is not mapped in the kernel, kernel memory is not user-accessible elsewhere
    assert!(walk(&l.ram, 0x4000_0000, ks, 0x1_0118).is_none());
    let t = &l.processes[1];
    let (_, f) = walk(&l.ram, 0x4000_0000, t.satp, 0xffd0_0000).unwrap();
    assert_eq!(f & FLG_U, 0);
    // stack: top page valid, the 7 below reserved (not valid)
    assert!(walk(&l.ram, 0x4000_0000, t.satp, 0x7fff_fff0).is_some());
    assert!(walk(&l.ram, 0x4000_0000, t.satp, 0x7fff_efff).is_none());
    // page tables are mapped into their own space at 0xff40_0000 + 4 KiB * vpn1
    let (pa, _) = walk(&l.ram, 0x4000_0000, t.satp, PAGE_TABLE_OFFSET + 1022 * PAGE).unwrap();
    let root1022 =
        u32::from_le_bytes(l.ram[(t.root_table + 1022 * 4 - 0x4000_0000) as usize..][..4].try_into().unwrap());
    assert_eq!(pa, (root1022 >> 10) << 12);
}

#[test]
fn tables_and_tracker() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    let t = l.tracker();
    assert_eq!(t.len() as u32, (4096 + 0x26 + 0x30 + 3) & !3, "one byte per page, rounded to words");
    // every used RAM page has an owner, every page below is free, regions are free
    let used = ((l.end_used - 0x4000_0000) / PAGE) as usize;
    assert!(t[..used].iter().all(|&o| (1..=3).contains(&o)));
    assert!(t[used..4096].iter().all(|&o| o == 0));
    assert!(l.ram[used * PAGE as usize..].iter().all(|&b| b == 0));
    assert_eq!(l.ram_image().len(), used * PAGE as usize);
    assert!(t[4096..].iter().all(|&o| o == 0));
    let total: u32 = l.processes.iter().map(|p| p.pages).sum();
    assert_eq!(total as usize, used);
    // the kernel-structures block first
    assert_eq!(l.kstruct.0, 0x4000_0000);
    assert_eq!(t[0], 1);
    assert_eq!((l.args_va, l.procs_va & 3, l.tracker_va & 3), (KERNEL_ARGUMENT_OFFSET, 0, 0));
    // the process table as the kernel reads it (InitialProcess: satp, entrypoint, sp)
    let tab = l.read_virt(l.kernel().satp, l.procs_va, 36).unwrap();
    let w = |i: usize| u32::from_le_bytes(tab[i * 4..i * 4 + 4].try_into().unwrap());
    assert_eq!((w(0) >> 22) & 0x1ff, 1);
    assert_eq!((w(1), w(2)), (0xffd0_0418, 0xfff7_fff0));
    assert_eq!(((w(3) >> 22) & 0x1ff, w(4), w(5)), (2, 0x2_0100, 0x7fff_fff0));
    assert_eq!(((w(6) >> 22) & 0x1ff, w(7)), (3, 0x1_1000));
}

#[test]
fn tags_parse_and_describe_the_programs() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    let raw = l.read_virt(l.kernel().satp, l.args_va, 4096).unwrap();
    let t = tags::decode(&raw).unwrap();
    let names: Vec<String> = t.iter().map(|t| t.name_str()).collect();
    assert_eq!(names, ["XArg", "MREx", "IniE", "IniE", "XKrn", "PNam"]);
    assert_eq!(t[0].data[1..], [1, 0x4000_0000, 0x100_0000, tags::name_word(b"SrEx")]);
    assert_eq!(tags::regions_of(&t[1]), params().regions);
    // IniE: load offset, entry, then (vaddr, size | flags << 24) per segment (no section headers)
    assert_eq!(t[2].data[..4], [0, 0x2_0100, 0x1_0118, 0x6f00]);
    assert_eq!(
        t[2].data[4..8],
        [0x1_7fe8, 0x281d0 | tags::MINIELF_FLG_X << 24, 0x4_11b8, 0x314 | tags::MINIELF_FLG_W << 24]
    );
    // XKrn: text 0xffd00000 + (0x1ae00 + 0x56b4), data 0xffd80000 0x2358 + bss 0x1c4
    assert_eq!(t[4].data, [0, 0xffd0_0000, 0x204b4, 0xffd8_0000, 0x2358, 0x1c4, 0xffd0_0418]);
    // PNam: (pid, len, name padded)
    let pn: Vec<u8> = t[5].data.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(&pn[..16], b"\x01\0\0\0\x06\0\0\0kernel\0\0");
    assert_eq!(&pn[16..40], b"\x02\0\0\0\x0e\0\0\0xous-ticktimer\0\0");
}

/// The kernel's own parser (xous-kernel 0.9.37 src/args.rs), compiled for the host.
#[cfg(kernel_src)]
#[allow(dead_code, static_mut_refs, clippy::all)]
mod kernel_args {
    include!(concat!(env!("XOUS_KERNEL_SRC_DIR"), "/src/args.rs"));
}

#[cfg(kernel_src)]
#[test]
fn the_kernels_own_parser_reads_the_tags() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    let raw = l.read_virt(l.kernel().satp, l.args_va, l.kstruct.1).unwrap();
    let words: Vec<u32> = raw.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    unsafe { kernel_args::KernelArguments::init(words.as_ptr()) };
    let args = kernel_args::KernelArguments::get();
    let got: Vec<(String, usize)> =
        args.iter().map(|a| (String::from_utf8_lossy(&a.name.to_le_bytes()).into_owned(), a.size)).collect();
    let want: Vec<(String, usize)> = l.tags.iter().map(|t| (t.name_str(), t.data.len() * 4)).collect();
    assert_eq!(got, want);
    assert_eq!(args.size(), tags::encode(&l.tags).unwrap().len());
    // what the kernel's memory manager reads (src/mem.rs init_from_memory)
    let xarg = args.iter().next().unwrap();
    assert_eq!(xarg.name, u32::from_le_bytes(*b"XArg"));
    assert_eq!(xarg.data[1], 1);
    assert_eq!((xarg.data[2], xarg.data[3]), (0x4000_0000, 0x100_0000));
    let mrex = args.iter().find(|a| a.name == u32::from_le_bytes(*b"MREx")).unwrap();
    let mem_size = 0x100_0000 / 4096 + mrex.data.chunks(4).map(|r| r[1] as usize / 4096).sum::<usize>();
    assert!(mem_size <= l.tracker_len as usize);
    // what init_from_memory of services.rs reads: one process-table entry per IniE/IniF + 1,
    // the IniE tags consecutive from the first one, PIDs from the satp
    let inits = args
        .iter()
        .filter(|a| a.name == u32::from_le_bytes(*b"IniE") || a.name == u32::from_le_bytes(*b"IniF"))
        .count();
    assert_eq!(inits + 1, l.processes.len());
    let first = args.iter().position(|a| a.name == u32::from_le_bytes(*b"IniE")).unwrap();
    assert!(args.iter().skip(first).take(inits).all(|a| a.name == u32::from_le_bytes(*b"IniE")));
    // Display (the kernel's own formatter) works on every tag
    for a in args.iter() {
        assert!(format!("{a}").contains("bytes"));
    }
}

#[test]
fn bad_input_gets_one_clear_line() {
    let (k, ps) = (kernel(), programs());
    let err = |p: &Params, k: &Program, ps: &[Program]| {
        let e = format!("{:#}", build(p, k, ps).unwrap_err());
        assert!(!e.contains('\n'), "{e}");
        e
    };
    // does not fit RAM
    let mut small = params();
    small.ram_size = 0x8_0000;
    let e = err(&small, &k, &ps);
    assert!(e.starts_with("image does not fit RAM: the 524288 bytes at 0x40000000 are used up while placing"), "{e}");
    // overlapping segments inside one ELF (refused by the parser) and against the stack
    let e = format!(
        "{:#}",
        elf::parse(&elf(1, EM_RISCV, 0x1_0000, &[(0x1_0000, 0x2000, 0x10, 0), (0x1_1000, 0x10, 0x10, 0)])).unwrap_err()
    );
    assert!(e.starts_with("overlapping segments"), "{e}");
    let on_stack = prog("stacky", 0x7fff_8000, &[(0x7fff_8000, 0x1000, 0x10, PF_X)]);
    let e = err(&params(), &k, &[on_stack]);
    assert!(e.contains("overlapping segments") && e.contains("reserved stack"), "{e}");
    // wrong architecture / missing file (the CLI's loader)
    let dir = std::env::temp_dir().join(format!("xous-layout-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x86 = dir.join("x86");
    std::fs::write(&x86, elf(1, 3, 0x1000, &[(0x1000, 0x10, 0x10, PF_X)])).unwrap();
    let e = format!("{:#}", elf::load(&x86).unwrap_err());
    assert!(e.contains("wrong architecture: ELF for x86") && e.contains(&*x86.to_string_lossy()), "{e}");
    assert!(format!("{:#}", elf::load(&dir.join("nope")).unwrap_err()).starts_with("missing ELF:"));
    std::fs::remove_dir_all(&dir).ok();
    // a kernel not linked at 0xffd0_0000, a program in kernel space
    let low = prog("kernel", 0x4000_0000, &[(0x4000_0000, 0x1000, 0x1000, PF_X)]);
    assert!(err(&params(), &low, &ps).contains("the kernel is linked at 0xffd00000"));
    let high = prog("evil", 0xff00_0000, &[(0xfeff_f000, 0x2000, 0x10, PF_X)]);
    assert!(err(&params(), &k, &[high]).contains("reaches the kernel's area"));
    // bad parameters
    let mut p = params();
    p.regions.push(Region { start: 0x4080_0000, size: 0x1000, name: tags::name_word(b"bad!") });
    assert!(err(&p, &k, &ps).contains("overlaps RAM"));
    let mut p = params();
    p.regions[0].size = 0x123;
    assert!(err(&p, &k, &ps).contains("not 4 KiB aligned"));
    let mut p = params();
    p.ram_base = 0x4000_0100;
    assert!(err(&p, &k, &ps).contains("multiples of 4 KiB"));
}

#[test]
fn verify_catches_a_damaged_layout() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    // one byte of a program's text
    let mut bad = build(&params(), &k, &ps).unwrap();
    let (pa, _) = walk(&bad.ram, 0x4000_0000, bad.processes[2].satp, 0x1_1234).unwrap();
    bad.ram[(pa - 0x4000_0000) as usize] ^= 1;
    assert!(format!("{:#}", verify(&bad, &k, &ps).unwrap_err()).contains("reads back different bytes"));
    // an owner in the page tracker
    let mut bad = build(&params(), &k, &ps).unwrap();
    let o = (bad.kstruct.0 + (bad.tracker_va - KERNEL_ARGUMENT_OFFSET) - 0x4000_0000) as usize;
    let (pa, _) = walk(&bad.ram, 0x4000_0000, bad.processes[1].satp, 0x1_7fe8).unwrap();
    bad.ram[o + ((pa - 0x4000_0000) / PAGE) as usize] = 3;
    assert!(format!("{:#}", verify(&bad, &k, &ps).unwrap_err()).contains("owned by PID 3"));
    // a user page made supervisor-only
    let mut bad = build(&params(), &k, &ps).unwrap();
    let root = bad.processes[1].root_table;
    let l1 = u32::from_le_bytes(bad.ram[(root - 0x4000_0000) as usize..][..4].try_into().unwrap());
    let l0 = ((l1 >> 10) << 12) + ((0x1_7000 >> 12) & 0x3ff) * 4;
    bad.ram[(l0 - 0x4000_0000) as usize] &= !(FLG_U as u8);
    assert!(format!("{:#}", verify(&bad, &k, &ps).unwrap_err()).contains("has flags"));
    verify(&l, &k, &ps).unwrap();
}

#[test]
fn stub_source_and_assembly() {
    let (k, ps) = (kernel(), programs());
    let l = build(&params(), &k, &ps).unwrap();
    let src = stub::source(&l, 0);
    for needle in [
        format!("li      a0, {:#010x}", l.args_va),
        format!("li      a1, {:#010x}", l.procs_va),
        format!("li      a2, {:#010x}", l.tracker_va),
        format!("li      t0, {:#010x}", l.kernel().satp),
        "li      a7, 0".into(),
        "li      a7, 1".into(),
        "mret".into(),
        "csrw    medeleg, t0".into(),
        format!(".equ MARKER,    {:#010x}", 0x4000_0000u32 + params().ram_size - stub::MARKER_BELOW_RAM_END),
    ] {
        assert!(src.contains(&needle), "{needle}");
    }
    assert!(stub::check_no_compressed(&[0x13, 0, 0, 0, 0x01, 0x00]).is_err());
    assert!(stub::check_no_compressed(&[0x01, 0x00, 0x13, 0]).unwrap_err().to_string().contains("compressed"));
    // assemble when the toolchain is present (cargo xtask installs it and runs this test)
    if std::process::Command::new(stub::AS).arg("--version").output().is_ok() {
        let dir = std::env::temp_dir().join(format!("xous-layout-stub-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bin = stub::assemble(&src, 0, &dir.join("rom.bin")).unwrap();
        // the marker check, the three paths and the two printed lines (two instructions per
        // character), with lui+addi pairs for every 32-bit constant
        assert!(bin.len() >= 4 * 100 && bin.len() <= 4 * 400, "{}", bin.len());
        // the last instruction is `j trap` (jal x0, 0): 0x0000006f
        assert_eq!(&bin[bin.len() - 4..], &0x0000_006fu32.to_le_bytes());
        std::fs::remove_dir_all(&dir).ok();
    } else if std::env::var("XOUS_LAYOUT_REQUIRE_KERNEL").as_deref() == Ok("1") {
        panic!("{} missing", stub::AS);
    }
}
