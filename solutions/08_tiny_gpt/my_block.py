from helpers.gpt.model import Block


class MyBlock(Block):
    def forward(self, x):
        """x (B, T, d_model) -> (B, T, d_model)."""
        x = x + self.attention(self.norm1(x))  # (B, T, d_model): attention on a normalised copy
        x = x + self.mlp(self.norm2(x))  # (B, T, d_model): the MLP on a normalised copy
        return x
