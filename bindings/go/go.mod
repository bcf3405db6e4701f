module ninfer

go 1.19
