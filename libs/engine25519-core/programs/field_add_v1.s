; Field addition (ISA v1): %31 = %0 + %1 mod p, for %0, %1 in [0, p). Clobbers %30.
.isa v1
add %31, %0, %1
trd %30, %31
sub %31, %31, %30
fin
