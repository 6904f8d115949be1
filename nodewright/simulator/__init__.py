"""`nodewright simulate`: the three functions, moto and the in-memory cluster on a virtual clock."""
