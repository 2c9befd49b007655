"""Generative workloads: DCGAN (64x64) and a VAE (MNIST-sized)."""
from .. import data
from ..workload import Workload


class DCGAN(Workload):
    """One step = the discriminator on real and fake batches plus the generator through the
    discriminator, summed into one backward pass (same compute as the alternating updates)."""

    name = "dcgan"
    description = "DCGAN 64x64 (generator + discriminator step); real data: imagenet layout"
    default_batch_size = 128
    data_kind = "imagenet"
    optimizer = "adam"
    lr = 2e-4
    nz = 100

    def build(self, args):
        import torch.nn as nn
        ngf = ndf = 64
        nz = self.nz

        class GAN(nn.Module):
            def __init__(self):
                super(GAN, self).__init__()
                self.G = nn.Sequential(
                    nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                    nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                    nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh())
                self.D = nn.Sequential(
                    nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
                    nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, True),
                    nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, True),
                    nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, True),
                    nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False))

            def forward(self, real):
                import torch
                z = torch.randn(real.shape[0], nz, 1, 1, device=real.device, dtype=real.dtype)
                fake = self.G(z)
                return self.D(real).view(-1), self.D(fake.detach()).view(-1), self.D(fake).view(-1)
        return GAN()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        return (torch.rand(args.batch_size, 3, 64, 64, generator=g).mul(2).sub(1).to(device),)

    def dataset(self, args):
        return data.image_folder(args.data, 64)

    def loss(self, model, batch):
        import torch
        import torch.nn.functional as F
        d_real, d_fake, g_fake = model(batch[0])
        ones, zeros = torch.ones_like(d_real), torch.zeros_like(d_real)
        err_d = F.binary_cross_entropy_with_logits(d_real, ones) + F.binary_cross_entropy_with_logits(d_fake, zeros)
        err_g = F.binary_cross_entropy_with_logits(g_fake, ones)
        return err_d + err_g


class VAE(Workload):
    name = "vae"
    description = "Variational autoencoder, 784-400-20 (MNIST-sized); real data: imagenet layout, grayscale 28x28"
    default_batch_size = 128
    data_kind = "imagenet"
    optimizer = "adam"
    lr = 1e-3

    def build(self, args):
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super(Model, self).__init__()
                self.fc1, self.mu, self.logvar = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
                self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)

            def forward(self, x):
                import torch
                h = torch.relu(self.fc1(x.view(-1, 784)))
                mu, logvar = self.mu(h), self.logvar(h)
                z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
                return self.fc4(torch.relu(self.fc3(z))), mu, logvar
        return Model()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        return (torch.rand(args.batch_size, 1, 28, 28, generator=g).to(device),)

    def dataset(self, args):
        return data.image_folder(args.data, 28, grayscale=True)

    def loss(self, model, batch):
        import torch
        import torch.nn.functional as F
        x = batch[0]
        logits, mu, logvar = model(x)
        bce = F.binary_cross_entropy_with_logits(logits.float(), x.view(-1, 784).float(), reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return (bce + kld) / x.shape[0]
