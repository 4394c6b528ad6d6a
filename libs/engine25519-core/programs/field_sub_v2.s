; Field subtraction (ISA v2): %31 = %0 - %1 mod p, for %0, %1 in [0, p).
.isa v2
fsub %31, %0, %1
fin
