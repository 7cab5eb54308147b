# memtamer-phase-profile v2
rank 1 4
iteration 1
sampler 1000000 16 4096 64
object b 524288
object q 524288
object p 528384
object r 524288
object x 524288
object a 2621440
object colidx 1310720
object rowptr 528384
phase phase0 1833 0 1663 0
phase phase1 2664148 2662726 36495 35413
phase phase2 6354754 4709654 1345083 16075
access q 8192 16
access p 8256 16
access a 40960 16
access colidx 20480 16
phase phase3 9977858 9139760 877387 39749
access q 8192 16
access p 8256 16
access r 8192 16
access x 8192 16
phase phase4 5629723 5330848 334528 35764
access p 8256 16
access r 8192 16
