//! Main RAM as the Xous kernel (0.9.37) finds it after a loader ran: every process loaded and
//! mapped through its own sv32 page tables, the argument tags, the initial process table and the
//! runtime page tracker. The facts come from the kernel's contract (its `src/main.rs` `init`,
//! `src/mem.rs`, `src/services.rs` `init_from_memory`, `src/arch/riscv/{mem,process}.rs`, its
//! `asm.S` entry) and the upstream loader's documented layout (docs/sim-boot.md lists them).
//!
//! Physical pages are handed out from the bottom of RAM upwards: the kernel-structures block
//! (tags, process table, page tracker; mapped at 0xffc0_0000 in the kernel), then the kernel and
//! every program with their page tables. (The upstream loader fills RAM from the top; the kernel
//! does not care where its pages are, and starting at the bottom lets ram.bin end at the last
//! used page: the simulator loads it as a memory-initialisation file, whose size dominates its
//! start-up time.)

use anyhow::{bail, Result};
use std::collections::BTreeMap;

use crate::elf::{Elf, PF_W, PF_X};
use crate::tags::{self, Region, Tag};

pub const PAGE: u32 = 4096;
pub const PAGE_TABLE_OFFSET: u32 = 0xff40_0000;
pub const PAGE_TABLE_ROOT_OFFSET: u32 = 0xff80_0000;
pub const CONTEXT_OFFSET: u32 = 0xff80_1000;
pub const USER_AREA_END: u32 = 0xff00_0000;
pub const USER_STACK_TOP: u32 = 0x8000_0000;
pub const USER_STACK_PAGES: u32 = 8;
pub const KERNEL_ARGUMENT_OFFSET: u32 = 0xffc0_0000;
/// The kernel maps its own pages from here on (WFI 0xffcd_0000, TRNG 0xffce_0000, UART
/// 0xffcf_0000): the kernel-structures block must end below.
pub const KERNEL_ARGUMENT_LIMIT: u32 = 0xffcd_0000;
pub const KERNEL_LOAD_OFFSET: u32 = 0xffd0_0000;
pub const KERNEL_STACK_TOP: u32 = 0xfff8_0000;
pub const EXCEPTION_STACK_TOP: u32 = 0xffff_0000;

pub const FLG_V: u32 = 0x1;
pub const FLG_R: u32 = 0x2;
pub const FLG_W: u32 = 0x4;
pub const FLG_X: u32 = 0x8;
pub const FLG_U: u32 = 0x10;
pub const FLG_A: u32 = 0x40;
pub const FLG_D: u32 = 0x80;

#[derive(Clone, Debug)]
pub struct Params {
    pub ram_base: u32,
    pub ram_size: u32,
    /// XArg's RAM name word (xous-create-image writes "SrEx" for Precursor's SRAM).
    pub ram_name: u32,
    /// Extra memory regions (MREx): peripherals and memories the kernel may hand to processes.
    pub regions: Vec<Region>,
}

pub struct Program {
    pub name: String,
    pub elf: Elf,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SegmentInfo {
    pub vaddr: u32,
    pub memsz: u32,
    pub flags: String,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub name: String,
    pub satp: u32,
    pub root_table: u32,
    pub entry: u32,
    pub sp: u32,
    /// RAM pages owned by this PID in the page tracker.
    pub pages: u32,
    pub segments: Vec<SegmentInfo>,
}

#[derive(Debug)]
pub struct Layout {
    pub params: Params,
    /// Main RAM contents, `ram_size` bytes from `ram_base`.
    pub ram: Vec<u8>,
    pub tags: Vec<Tag>,
    /// Physical start and length of the kernel-structures block (mapped at 0xffc0_0000).
    pub kstruct: (u32, u32),
    /// Kernel virtual addresses of the tags, the process table and the page tracker (a0, a1, a2).
    pub args_va: u32,
    pub procs_va: u32,
    pub tracker_va: u32,
    pub tracker_len: u32,
    pub processes: Vec<ProcessInfo>,
    /// The end of the pages handed out: RAM from here on is free and zero (ram.bin stops here).
    pub end_used: u32,
}

impl Layout {
    pub fn kernel(&self) -> &ProcessInfo {
        &self.processes[0]
    }

    /// ram.bin: RAM from `ram_base` up to the last used page (the rest of RAM is zero).
    pub fn ram_image(&self) -> &[u8] {
        &self.ram[..(self.end_used - self.params.ram_base) as usize]
    }
}

fn flag_str(f: u32) -> String {
    [(FLG_R, 'r'), (FLG_W, 'w'), (FLG_X, 'x'), (FLG_U, 'u')]
        .iter()
        .map(|&(b, c)| if f & b != 0 { c } else { '-' })
        .collect()
}

struct Builder {
    p: Params,
    ram: Vec<u8>,
    owner: Vec<u8>,
    /// The next free page.
    next: u32,
    /// What is being placed (for the out-of-RAM error).
    what: String,
}

impl Builder {
    fn rd(&self, pa: u32) -> u32 {
        let o = (pa - self.p.ram_base) as usize;
        u32::from_le_bytes(self.ram[o..o + 4].try_into().unwrap())
    }

    fn wr(&mut self, pa: u32, v: u32) {
        let o = (pa - self.p.ram_base) as usize;
        self.ram[o..o + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn set_owner(&mut self, pa: u32, pid: u32) {
        self.owner[((pa - self.p.ram_base) / PAGE) as usize] = pid as u8;
    }

    /// A zeroed page of RAM, owned by `pid`.
    fn alloc(&mut self, pid: u32) -> Result<u32> {
        if self.next as u64 + PAGE as u64 > self.p.ram_base as u64 + self.p.ram_size as u64 {
            bail!(
                "image does not fit RAM: the {} bytes at {:#010x} are used up while placing {}",
                self.p.ram_size,
                self.p.ram_base,
                self.what
            );
        }
        let pa = self.next;
        self.next += PAGE;
        self.set_owner(pa, pid);
        Ok(pa)
    }

    /// Map `virt` to `phys` in the address space rooted at `root` (the upstream loader's
    /// convention: a new leaf table is owned by PID 1 and mapped into the same space at
    /// 0xff40_0000 + 4 KiB * vpn1). A second mapping of a page to the same frame adds flags; to
    /// another frame (or over a reserved entry) it is an overlap.
    fn map(&mut self, root: u32, virt: u32, phys: u32, flags: u32, what: &str) -> Result<()> {
        let vpn1 = virt >> 22;
        let vpn0 = (virt >> 12) & 0x3ff;
        let mut new_table = None;
        if self.rd(root + vpn1 * 4) & FLG_V == 0 {
            let l0 = self.alloc(1)?;
            self.wr(root + vpn1 * 4, (l0 >> 12) << 10 | FLG_V);
            new_table = Some(l0);
        }
        let l0 = (self.rd(root + vpn1 * 4) >> 10) << 12;
        let old = self.rd(l0 + vpn0 * 4);
        if old != 0 {
            let old_valid = old & FLG_V != 0;
            if !old_valid || flags & FLG_V == 0 || (old >> 10) != (phys >> 12) {
                bail!(
                    "overlapping segments: {what} at {virt:#010x} collides with a page already mapped there ({})",
                    if old_valid { "a loaded page" } else { "the reserved stack" }
                );
            }
        }
        self.wr(l0 + vpn0 * 4, (phys >> 12) << 10 | flags | (old & 0x3ff) | FLG_D | FLG_A);
        if let Some(t) = new_table {
            self.map(root, PAGE_TABLE_OFFSET + vpn1 * PAGE, t, FLG_R | FLG_W | FLG_V, "a page table")?;
        }
        Ok(())
    }

    fn copy(&mut self, pa: u32, data: &[u8]) {
        let o = (pa - self.p.ram_base) as usize;
        self.ram[o..o + data.len()].copy_from_slice(data);
    }

    /// A new address space for `pid`: root table at 0xff80_0000, thread context at 0xff80_1000.
    fn space(&mut self, pid: u32) -> Result<u32> {
        let root = self.alloc(pid)?;
        self.map(root, PAGE_TABLE_ROOT_OFFSET, root, FLG_R | FLG_W | FLG_V, "the root page table")?;
        let ctx = self.alloc(pid)?;
        self.map(root, CONTEXT_OFFSET, ctx, FLG_R | FLG_W | FLG_V, "the thread context")?;
        Ok(root)
    }

    /// Load an ELF's segments into fresh pages of `pid`, page by page (pages shared by two
    /// segments get the union of their flags).
    fn load(&mut self, root: u32, pid: u32, elf: &Elf, user: bool) -> Result<Vec<SegmentInfo>> {
        let mut frames: BTreeMap<u32, u32> = BTreeMap::new();
        let mut info = Vec::new();
        for s in &elf.segments {
            let flags = FLG_V
                | FLG_R
                | if s.flags & PF_W != 0 { FLG_W } else { 0 }
                | if s.flags & PF_X != 0 { FLG_X } else { 0 }
                | if user { FLG_U } else { 0 };
            info.push(SegmentInfo { vaddr: s.vaddr, memsz: s.memsz, flags: flag_str(flags) });
            let mut va = s.vaddr & !(PAGE - 1);
            while (va as u64) < s.end() {
                let pa = match frames.get(&va) {
                    Some(&pa) => pa,
                    None => {
                        let pa = self.alloc(pid)?;
                        frames.insert(va, pa);
                        pa
                    }
                };
                self.map(root, va, pa, flags, &format!("segment {:#010x}..{:#010x}", s.vaddr, s.end()))?;
                // file bytes falling into this page
                let lo = va.max(s.vaddr);
                let hi = ((va as u64 + PAGE as u64).min(s.vaddr as u64 + s.data.len() as u64)) as u32;
                if hi > lo {
                    let src = &s.data[(lo - s.vaddr) as usize..(hi - s.vaddr) as usize];
                    self.copy(pa + (lo - va), src);
                }
                match va.checked_add(PAGE) {
                    Some(n) => va = n,
                    None => break,
                }
            }
        }
        Ok(info)
    }
}

/// The checks the kernel's placement relies on, before anything is laid out.
fn check_inputs(p: &Params, kernel: &Program, programs: &[Program]) -> Result<()> {
    if !p.ram_base.is_multiple_of(PAGE) || !p.ram_size.is_multiple_of(PAGE) || p.ram_size == 0 {
        bail!("RAM base {:#x} and size {:#x} must be non-zero multiples of 4 KiB", p.ram_base, p.ram_size);
    }
    if p.ram_base as u64 + p.ram_size as u64 > 1 << 32 {
        bail!("RAM {:#010x} + {:#x} runs past the 32-bit address space", p.ram_base, p.ram_size);
    }
    for r in &p.regions {
        if r.start % PAGE != 0 || r.size % PAGE != 0 {
            bail!("memory region {} at {:#010x} (+{:#x}) is not 4 KiB aligned", tags::name_of(r.name), r.start, r.size);
        }
        let (a0, a1, b0, b1) =
            (r.start as u64, r.start as u64 + r.size as u64, p.ram_base as u64, p.ram_base as u64 + p.ram_size as u64);
        if a0 < b1 && b0 < a1 {
            bail!("memory region {} at {:#010x} overlaps RAM", tags::name_of(r.name), r.start);
        }
    }
    let k = &kernel.elf;
    let lowest = k.segments[0].vaddr;
    if lowest != KERNEL_LOAD_OFFSET {
        bail!(
            "kernel {}: lowest segment at {lowest:#010x}, the kernel is linked at {KERNEL_LOAD_OFFSET:#010x}",
            kernel.name
        );
    }
    let end = k.segments.last().unwrap().end();
    if end > (KERNEL_STACK_TOP - PAGE) as u64 {
        bail!("kernel {}: segments end at {end:#x}, into the kernel stack below {KERNEL_STACK_TOP:#010x}", kernel.name);
    }
    for pr in programs {
        if let Some(s) = pr.elf.segments.iter().find(|s| s.end() > USER_AREA_END as u64) {
            bail!("program {}: segment {:#010x}..{:#010x} reaches the kernel's area (user space ends at {USER_AREA_END:#010x})", pr.name, s.vaddr, s.end());
        }
    }
    if programs.len() + 1 > 64 {
        bail!("{} processes: the kernel has room for 64", programs.len() + 1);
    }
    Ok(())
}

/// Build the tags the kernel parses for this set of programs (PID 1 = kernel, then 2, 3, ...).
pub fn make_tags(p: &Params, kernel: &Program, programs: &[Program]) -> Result<Vec<Tag>> {
    let mut t = vec![tags::xarg(p.ram_base, p.ram_size, p.ram_name)];
    if !p.regions.is_empty() {
        t.push(tags::mrex(&p.regions));
    }
    for pr in programs {
        t.push(tags::inie(&pr.elf).map_err(|e| anyhow::anyhow!("program {}: {e}", pr.name))?);
    }
    t.push(tags::xkrn(&kernel.elf));
    let mut names = vec![(1, kernel.name.clone())];
    names.extend(programs.iter().enumerate().map(|(i, pr)| (i as u32 + 2, pr.name.clone())));
    t.push(tags::pnam(&names));
    Ok(t)
}

/// Lay out RAM for `kernel` (PID 1) and `programs` (PID 2, 3, ... in order).
pub fn build(p: &Params, kernel: &Program, programs: &[Program]) -> Result<Layout> {
    check_inputs(p, kernel, programs)?;
    let tags = make_tags(p, kernel, programs)?;
    let args = tags::encode(&tags)?;
    let nproc = programs.len() as u32 + 1;
    let region_pages: u32 = p.regions.iter().map(|r| r.size / PAGE).sum();
    let tracker_len = (p.ram_size / PAGE + region_pages + 3) & !3;
    // kernel-structures block: tags, process table (satp, entry, sp per process), page tracker
    let args_off = 0u32;
    let procs_off = (args.len() as u32 + 3) & !3;
    let tracker_off = procs_off + nproc * 12;
    let block_len = (tracker_off + tracker_len + PAGE - 1) & !(PAGE - 1);
    if KERNEL_ARGUMENT_OFFSET + block_len > KERNEL_ARGUMENT_LIMIT {
        bail!("the kernel structures ({block_len} bytes: tags, process table, page tracker) do not fit below {KERNEL_ARGUMENT_LIMIT:#010x}");
    }
    let mut b = Builder {
        p: p.clone(),
        ram: vec![0; p.ram_size as usize],
        owner: vec![0; (p.ram_size / PAGE) as usize],
        next: p.ram_base,
        what: String::new(),
    };
    b.what = "the kernel structures".into();
    let mut block = Vec::new();
    for _ in 0..block_len / PAGE {
        block.push(b.alloc(1)?);
    }
    let kstruct = block[0]; // the block is contiguous
    let mut processes = Vec::new();

    // the kernel, PID 1
    b.what = format!("the kernel {}", kernel.name);
    let kroot = b.space(1)?;
    let ksegs = b.load(kroot, 1, &kernel.elf, false)?;
    let kstack = b.alloc(1)?;
    b.map(kroot, (KERNEL_STACK_TOP - 16) & !(PAGE - 1), kstack, FLG_R | FLG_W | FLG_V, "the kernel stack")?;
    let xstack = b.alloc(1)?;
    b.map(kroot, (EXCEPTION_STACK_TOP - 16) & !(PAGE - 1), xstack, FLG_R | FLG_W | FLG_V, "the exception stack")?;
    for i in 0..block_len / PAGE {
        b.map(
            kroot,
            KERNEL_ARGUMENT_OFFSET + i * PAGE,
            kstruct + i * PAGE,
            FLG_R | FLG_W | FLG_V,
            "the kernel structures",
        )?;
    }
    processes.push(ProcessInfo {
        pid: 1,
        name: kernel.name.clone(),
        satp: 0x8000_0000 | 1 << 22 | kroot >> 12,
        root_table: kroot,
        entry: kernel.elf.entry,
        sp: KERNEL_STACK_TOP - 16,
        pages: 0,
        segments: ksegs,
    });

    for (i, pr) in programs.iter().enumerate() {
        let pid = i as u32 + 2;
        b.what = format!("program {} (PID {pid})", pr.name);
        let root = b.space(pid)?;
        let sp = USER_STACK_TOP - 16;
        let stack = b.alloc(pid)?;
        b.map(root, sp & !(PAGE - 1), stack, FLG_U | FLG_R | FLG_W | FLG_V, "the stack")?;
        for k in 1..USER_STACK_PAGES {
            // reserved: the kernel backs these on first touch
            b.map(root, (sp & !(PAGE - 1)) - k * PAGE, 0, FLG_U | FLG_R | FLG_W, "the stack")?;
        }
        let segs = b.load(root, pid, &pr.elf, true)?;
        processes.push(ProcessInfo {
            pid,
            name: pr.name.clone(),
            satp: 0x8000_0000 | pid << 22 | root >> 12,
            root_table: root,
            entry: pr.elf.entry,
            sp,
            pages: 0,
            segments: segs,
        });
    }

    // every process shares the kernel's megapage 1023 (kernel code, stacks, structures)
    let k1023 = b.rd(kroot + 1023 * 4);
    for pr in &processes[1..] {
        b.wr(pr.root_table + 1023 * 4, k1023);
    }

    // fill the kernel-structures block
    let mut blk = vec![0u8; block_len as usize];
    blk[args_off as usize..args.len()].copy_from_slice(&args);
    for (i, pr) in processes.iter().enumerate() {
        let o = procs_off as usize + i * 12;
        for (j, w) in [pr.satp, pr.entry, pr.sp].iter().enumerate() {
            blk[o + j * 4..o + j * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
    }
    // page tracker: RAM pages, then each region's pages (all unowned)
    blk[tracker_off as usize..(tracker_off as usize + b.owner.len())].copy_from_slice(&b.owner);
    b.copy(kstruct, &blk);
    for pr in processes.iter_mut() {
        pr.pages = b.owner.iter().filter(|&&o| o as u32 == pr.pid).count() as u32;
    }
    let l = Layout {
        params: p.clone(),
        ram: b.ram,
        tags,
        kstruct: (kstruct, block_len),
        args_va: KERNEL_ARGUMENT_OFFSET + args_off,
        procs_va: KERNEL_ARGUMENT_OFFSET + procs_off,
        tracker_va: KERNEL_ARGUMENT_OFFSET + tracker_off,
        tracker_len,
        processes,
        end_used: b.next,
    };
    verify(&l, kernel, programs).map_err(|e| anyhow::anyhow!("layout self-check failed: {e}"))?;
    Ok(l)
}

/// sv32 translation of `va` in the space `satp`, reading the tables from `ram`: (physical
/// address, leaf flags), or None when unmapped.
pub fn walk(ram: &[u8], ram_base: u32, satp: u32, va: u32) -> Option<(u32, u32)> {
    let rd = |pa: u32| -> Option<u32> {
        let o = pa.checked_sub(ram_base)? as usize;
        ram.get(o..o + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let root = (satp & 0x3f_ffff) << 12;
    let l1 = rd(root + (va >> 22) * 4)?;
    if l1 & FLG_V == 0 {
        return None;
    }
    if l1 & (FLG_R | FLG_W | FLG_X) != 0 {
        return None; // no megapages are made here
    }
    let l0 = rd(((l1 >> 10) << 12) + ((va >> 12) & 0x3ff) * 4)?;
    if l0 & FLG_V == 0 {
        return None;
    }
    Some((((l0 >> 10) << 12) | (va & 0xfff), l0 & 0x3ff))
}

impl Layout {
    /// Read `len` bytes at virtual address `va` of `satp`'s space (None if any page is unmapped).
    pub fn read_virt(&self, satp: u32, va: u32, len: u32) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len as usize);
        let mut a = va;
        while out.len() < len as usize {
            let (pa, _) = walk(&self.ram, self.params.ram_base, satp, a)?;
            let n = ((PAGE - (a & 0xfff)) as usize).min(len as usize - out.len());
            let o = (pa - self.params.ram_base) as usize;
            out.extend_from_slice(&self.ram[o..o + n]);
            a = a.wrapping_add(n as u32);
        }
        Some(out)
    }

    pub fn tracker(&self) -> &[u8] {
        let o = (self.kstruct.0 + (self.tracker_va - KERNEL_ARGUMENT_OFFSET) - self.params.ram_base) as usize;
        &self.ram[o..o + self.tracker_len as usize]
    }

    pub fn args_bytes(&self) -> &[u8] {
        let o = (self.kstruct.0 - self.params.ram_base) as usize;
        &self.ram[o..o + self.kstruct.1 as usize]
    }
}

/// Check a finished layout independently of how it was built: every byte of every segment reads
/// back through the process's page tables with the segment's permissions, the stacks, contexts,
/// root-table self-maps and the kernel structures resolve, megapage 1023 is shared, and every
/// RAM page a table points to is owned in the page tracker by the right PID.
pub fn verify(l: &Layout, kernel: &Program, programs: &[Program]) -> Result<()> {
    let base = l.params.ram_base;
    let tracker = l.tracker();
    let owner = |pa: u32| tracker[((pa - base) / PAGE) as usize] as u32;
    let all = std::iter::once(kernel).chain(programs.iter());
    let k1023 = {
        let o = (l.kernel().root_table + 1023 * 4 - base) as usize;
        u32::from_le_bytes(l.ram[o..o + 4].try_into().unwrap())
    };
    for (pr, info) in all.zip(l.processes.iter()) {
        let user = info.pid != 1;
        let who = format!("PID {} ({})", info.pid, info.name);
        if info.satp >> 31 != 1 || (info.satp >> 22) & 0x1ff != info.pid {
            bail!("{who}: satp {:#010x} does not name sv32 with ASID {}", info.satp, info.pid);
        }
        for s in &pr.elf.segments {
            let got = l
                .read_virt(info.satp, s.vaddr, s.memsz)
                .ok_or_else(|| anyhow::anyhow!("{who}: segment {:#010x} does not resolve", s.vaddr))?;
            if got[..s.data.len()] != s.data[..] || got[s.data.len()..].iter().any(|&b| b != 0) {
                bail!("{who}: segment {:#010x} reads back different bytes", s.vaddr);
            }
            let mut va = s.vaddr & !(PAGE - 1);
            while (va as u64) < s.end() {
                let (pa, f) = walk(&l.ram, base, info.satp, va).unwrap();
                let want_w = s.flags & PF_W != 0;
                let want_x = s.flags & PF_X != 0;
                if f & FLG_R == 0
                    || (want_w && f & FLG_W == 0)
                    || (want_x && f & FLG_X == 0)
                    || (f & FLG_U != 0) != user
                {
                    bail!(
                        "{who}: page {va:#010x} has flags {} for a segment {}",
                        flag_str(f),
                        flag_str(
                            FLG_R
                                | if want_w { FLG_W } else { 0 }
                                | if want_x { FLG_X } else { 0 }
                                | if user { FLG_U } else { 0 }
                        )
                    );
                }
                if owner(pa) != info.pid {
                    bail!("{who}: page {va:#010x} -> {pa:#010x} is owned by PID {} in the page tracker", owner(pa));
                }
                va = match va.checked_add(PAGE) {
                    Some(v) => v,
                    None => break,
                };
            }
        }
        let root = walk(&l.ram, base, info.satp, PAGE_TABLE_ROOT_OFFSET).map(|(pa, _)| pa);
        if root != Some(info.root_table) || owner(info.root_table) != info.pid {
            bail!("{who}: the root table is not mapped at {PAGE_TABLE_ROOT_OFFSET:#010x} or not owned by it");
        }
        match walk(&l.ram, base, info.satp, CONTEXT_OFFSET) {
            Some((pa, _)) if owner(pa) == info.pid => {}
            _ => bail!("{who}: no thread context at {CONTEXT_OFFSET:#010x}"),
        }
        match walk(&l.ram, base, info.satp, info.sp) {
            Some((pa, f)) if owner(pa) == info.pid && f & FLG_W != 0 && (f & FLG_U != 0) == user => {}
            _ => bail!("{who}: the stack top {:#010x} is not mapped writable", info.sp),
        }
        let r1023 = {
            let o = (info.root_table + 1023 * 4 - base) as usize;
            u32::from_le_bytes(l.ram[o..o + 4].try_into().unwrap())
        };
        if r1023 != k1023 {
            bail!("{who}: megapage 1023 is not the kernel's");
        }
        // the kernel's structures, through this space: tags at a0 in every process
        let tags = l
            .read_virt(info.satp, l.args_va, 8)
            .ok_or_else(|| anyhow::anyhow!("{who}: the argument tags are not mapped at {:#010x}", l.args_va))?;
        if &tags[0..4] != b"XArg" {
            bail!("{who}: {:#010x} does not hold the XArg tag", l.args_va);
        }
    }
    let k = l.kernel();
    match walk(&l.ram, base, k.satp, (EXCEPTION_STACK_TOP - 16) & !(PAGE - 1)) {
        Some((_, f)) if f & FLG_W != 0 => {}
        _ => bail!("kernel: no exception stack below {EXCEPTION_STACK_TOP:#010x}"),
    }
    // the process table, read through the kernel's space as the kernel reads it
    let table = l
        .read_virt(k.satp, l.procs_va, 12 * l.processes.len() as u32)
        .ok_or_else(|| anyhow::anyhow!("process table not mapped"))?;
    for (i, info) in l.processes.iter().enumerate() {
        let w = |j: usize| u32::from_le_bytes(table[i * 12 + j * 4..i * 12 + j * 4 + 4].try_into().unwrap());
        if (w(0), w(1), w(2)) != (info.satp, info.entry, info.sp) {
            bail!("process table entry {i} does not describe PID {}", info.pid);
        }
    }
    let region_pages: u32 = l.params.regions.iter().map(|r| r.size / PAGE).sum();
    if l.tracker_len < l.params.ram_size / PAGE + region_pages {
        bail!(
            "the page tracker has {} entries, the kernel indexes {}",
            l.tracker_len,
            l.params.ram_size / PAGE + region_pages
        );
    }
    Ok(())
}
